"""The `apimcp` command line."""
