"""What a backend call carries of the client's request: the header policy, trace context, Forwarded."""
