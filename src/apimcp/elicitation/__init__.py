"""Per-user backend credentials: secrets each user supplies (a token in a form, an OAuth connection), asked for
by URL elicitation, kept per user or session, sealed at rest."""
