"""The rules behind the routes; they never raise HTTP exceptions, only the service's errors."""
