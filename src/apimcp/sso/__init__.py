"""Single sign-on for people: the control plane as an OpenID Connect client of the company's provider
(authorization code with PKCE), for the console and `apimcp login --sso`."""
