"""Backends call an Operation with arguments and answer a neutral result; the only place protocols differ."""
