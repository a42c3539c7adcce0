"""The control plane: configuration and secrets behind the gateway."""
