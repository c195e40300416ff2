"""Tests of credit_service against a real PostgreSQL."""
