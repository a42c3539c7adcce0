"""Safety rules for what servers do on someone's behalf: which addresses a fetch may reach, how a fetch is
bounded, how much a YAML document may expand. Nothing here imports the rest of apimcp."""
