"""The neutral model of an API: a Service and the Operations it offers."""
