"""The control plane's operations on its objects, each scoped to one organization."""
