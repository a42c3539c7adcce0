// A real OpenID provider for apimcp's tests: oidc-provider (certified), with resource indicators (JWT or
// opaque access tokens per resource), introspection, PKCE, dynamic client registration, refresh tokens, the
// client credentials grant, and an RFC 8693 token exchange grant. The user "logs in" as the login_hint of the
// authorization request (alice when none): the tests play the browser.
//
// Configuration: the IDP_CONFIG environment variable, JSON:
//   {"port": 0, "clients": [...oidc-provider client metadata], "opaque": ["substring of opaque resources"],
//    "algorithms": {"substring of a resource": "RS256"}, "ttl": {"substring of a resource": 5},
//    "scopes": ["mcp:read", ...]}
// It prints `ready <port>` once listening.

import http from 'node:http';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import Provider, { errors } from 'oidc-provider';
import * as jose from 'jose';

const config = JSON.parse(process.env.IDP_CONFIG || '{}');
const scopes = config.scopes || ['mcp:read', 'mcp:write', 'books:write', 'backend:read'];

function signingKey(type, options, alg, kid) {
  const { privateKey } = generateKeyPairSync(type, options);
  return { ...privateKey.export({ format: 'jwk' }), alg, kid: `${kid}-${randomUUID().slice(0, 8)}`, use: 'sig' };
}

const keys = [
  signingKey('ec', { namedCurve: 'P-256' }, 'ES256', 'es256'),
  signingKey('rsa', { modulusLength: 2048 }, 'RS256', 'rs256'),
  signingKey('rsa', { modulusLength: 2048 }, 'PS256', 'ps256'),
  signingKey('ed25519', {}, 'EdDSA', 'eddsa'),
];

function pick(table, resource, fallback) {
  for (const [part, value] of Object.entries(table || {})) {
    if (resource.includes(part)) return value;
  }
  return fallback;
}

function lifetime(token) {
  const audience = String(token.aud || (token.resourceServer && token.resourceServer.audience) || '');
  return pick(config.ttl, audience, 600);
}

const server = http.createServer();
await new Promise((resolve) => server.listen(config.port || 0, '127.0.0.1', resolve));
const { port } = server.address();
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
  clients: config.clients || [],
  jwks: { keys },
  scopes: ['openid', 'offline_access', 'email', 'profile', ...scopes],
  pkce: { required: () => true },
  ttl: {
    AccessToken: (ctx, token) => lifetime(token),
    ClientCredentials: (ctx, token) => lifetime(token),
    Interaction: 600,
    Session: 3600,
    Grant: 3600,
    RefreshToken: 3600,
  },
  enabledJWA: { authorizationSigningAlgValues: ['ES256', 'RS256', 'PS256', 'EdDSA'] },
  // Each account is named by its id (the login_hint): `alice` is alice@example.test, for single sign-on tests.
  findAccount: async (ctx, sub) => ({
    accountId: sub,
    claims: async () => ({ sub, email: `${sub}@example.test`, email_verified: true, name: sub }),
  }),
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  // Claims a static client's access tokens carry besides the usual ones (groups, region...), for policy tests.
  extraTokenClaims: async (ctx, token) => (config.claims || {})[token.clientId],
  features: {
    devInteractions: { enabled: false },
    userinfo: { enabled: true },
    registration: { enabled: true },
    introspection: { enabled: true, allowedPolicy: async () => true },
    revocation: { enabled: true },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async () => undefined,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (ctx, resource) => {
        const opaque = (config.opaque || []).some((part) => resource.includes(part));
        return {
          scope: scopes.join(' '),
          audience: resource,
          accessTokenTTL: pick(config.ttl, resource, 600),
          accessTokenFormat: opaque ? 'opaque' : 'jwt',
          jwt: { sign: { alg: pick(config.algorithms, resource, 'ES256') } },
        };
      },
    },
  },
  issueRefreshToken: async (ctx, client, code) => client.grantTypeAllowed('refresh_token'),
  loadExistingGrant: async (ctx) => {
    // Every requested scope and resource is granted: the tests check the gateway, not a consent screen.
    const { Grant } = ctx.oidc.provider;
    const grant = new Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    const requested = (ctx.oidc.params.scope || '').split(' ').filter(Boolean);
    // Resource scopes are also listed as the provider's own (registration accepts no others): grant both.
    grant.addOIDCScope(['openid', 'offline_access', ...requested].join(' '));
    const resources = [].concat(ctx.oidc.params.resource || []);
    for (const resource of resources) grant.addResourceScope(resource, requested.join(' '));
    await grant.save();
    return grant;
  },
});

// RFC 8693: a JWT access token of this provider (the subject) exchanged for a token for another audience,
// carrying the same subject and the exchanging client as the actor.
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const publicKeys = jose.createLocalJWKSet({ keys: keys.map(({ d, p, q, dp, dq, qi, ...rest }) => rest) });
provider.registerGrantType(TOKEN_EXCHANGE, async (ctx) => {
  const { subject_token: subject, audience, scope } = ctx.oidc.params;
  let claims;
  try {
    ({ payload: claims } = await jose.jwtVerify(subject, publicKeys, { issuer }));
  } catch (error) {
    throw new errors.InvalidGrant(`subject_token is not valid: ${error.code || error.message}`);
  }
  const key = keys[0];
  const signer = await jose.importJWK(key, key.alg);
  const token = await new jose.SignJWT({ scope: scope || '', act: { sub: ctx.oidc.client.clientId } })
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt' })
    .setIssuer(issuer)
    .setSubject(claims.sub)
    .setAudience(audience || 'backend')
    .setIssuedAt()
    .setExpirationTime('10m')
    .setJti(randomUUID())
    .sign(signer);
  exchanges += 1;
  ctx.body = {
    access_token: token,
    issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
    token_type: 'Bearer',
    expires_in: 600,
  };
}, ['subject_token', 'subject_token_type', 'audience', 'scope', 'resource', 'requested_token_type']);
let exchanges = 0;
let registrations = 0;
provider.on('registration_create.success', () => { registrations += 1; });

const callback = provider.callback();
server.on('request', async (req, res) => {
  const url = new URL(req.url, issuer);
  try {
    if (url.pathname === '/test/stats') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ exchanges, registrations }));
      return;
    }
    if (url.pathname.startsWith('/interaction/')) {
      const details = await provider.interactionDetails(req, res);
      if (process.env.IDP_DEBUG) process.stderr.write(JSON.stringify(details.prompt) + '\n');
      if (details.prompt.name === 'login') {
        const accountId = details.params.login_hint || 'alice';
        await provider.interactionFinished(req, res, { login: { accountId } }, { mergeWithLastSubmission: false });
      } else {
        const grant = new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
        const requested = (details.params.scope || '').split(' ').filter(Boolean).join(' ');
        grant.addOIDCScope(`openid offline_access ${requested}`);
        for (const resource of [].concat(details.params.resource || [])) grant.addResourceScope(resource, requested);
        const grantId = await grant.save();
        await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
      }
      return;
    }
    callback(req, res);
  } catch (error) {
    res.statusCode = 500;
    res.end(String(error));
  }
});

process.stdout.write(`ready ${port}\n`);
