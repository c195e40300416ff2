"""Tests of the shared service runtime."""
