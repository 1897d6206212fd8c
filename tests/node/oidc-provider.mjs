// A real OpenID Provider for Nebula's single sign-on tests: panva's certified oidc-provider,
// configured from a JSON file the test fixture writes (tests/infra/oidcprovider.py):
//
//   node tests/node/oidc-provider.mjs CONFIG.json
//
// CONFIG: {"port", "device_flow": bool, "device_interval": seconds, "id_token_ttl": seconds,
//          "jwks": {"keys": [...]},
//          "clients": [client metadata], "users": {"alice": {"email", "email_verified", "groups"}}}
//
// People sign in on the provider's own development login form (any password) as one of the
// users; they are never asked to consent (the grant is given), so a test drives one form.
// Claims of the requested scopes go into the ID token itself (as most providers put them),
// not only into the userinfo answer. It prints "listening on <issuer>" once it serves.

import { readFileSync } from 'node:fs';
import Provider, { interactionPolicy } from 'oidc-provider';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const issuer = `http://127.0.0.1:${config.port}`;
const users = config.users;

// Native clients may redirect to any port of a loopback address (RFC 8252 7.3): Nebula's test
// servers and the command line's loopback listener take free ports. Consent is not asked.
const policy = interactionPolicy.base();
policy.get('consent').checks.remove('native_client_prompt');

const page = (title, body) => `<!DOCTYPE html><html><head><meta charset="utf-8"><title>${title}</title></head><body><h1>${title}</h1>${body}</body></html>`;

const provider = new Provider(issuer, {
  clients: config.clients,
  jwks: config.jwks,
  cookies: { keys: ['nebula-test-provider-cookie-key'] },
  pkce: { required: () => true },
  conformIdTokenClaims: false,
  scopes: ['openid', 'email', 'profile', 'groups', 'offline_access'],
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'preferred_username'],
    groups: ['groups'],
  },
  ttl: { IdToken: config.id_token_ttl || 3600, DeviceCode: 600 },
  interactions: { policy },
  features: {
    devInteractions: { enabled: true },
    deviceFlow: {
      enabled: Boolean(config.device_flow),
      userCodeInputSource: async (ctx, form, out, err) => {
        const problem = err ? '<p id="problem">That code is not valid.</p>' : '';
        ctx.body = page('Enter the code', `${problem}${form}<button type="submit" form="op.deviceInputForm">Continue</button>`);
      },
      userCodeConfirmSource: async (ctx, form, client, deviceInfo, userCode) => {
        ctx.body = page('Confirm the device', `<p>Code <code id="user-code">${userCode}</code></p>${form}<button type="submit" form="op.deviceConfirmForm">Continue</button><button type="submit" form="op.deviceConfirmForm" name="abort" value="yes">Abort</button>`);
      },
      successSource: async (ctx) => {
        ctx.body = page('Signed in', '<p id="done">You may close this window.</p>');
      },
    },
    rpInitiatedLogout: {
      enabled: true,
      logoutSource: async (ctx, form) => {
        ctx.body = page('Sign out', `${form}<button type="submit" form="op.logoutForm" value="yes" name="logout">Sign out</button>`);
      },
    },
  },
  async loadExistingGrant(ctx) {
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId,
      accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope('openid email profile groups offline_access');
    await grant.save();
    return grant;
  },
  async findAccount(ctx, id) {
    const user = users[id];
    if (!user) {
      return undefined;
    }
    return {
      accountId: id,
      async claims() {
        return { sub: id, preferred_username: id, name: id, ...user };
      },
    };
  },
});

// The development login page imports a web font from the Internet: a test browser has none.
// A device is told to poll every `device_interval` seconds (RFC 8628 says 5 when unsaid).
provider.use(async (ctx, next) => {
  await next();
  if (typeof ctx.body === 'string' && ctx.type === 'text/html') {
    ctx.body = ctx.body.replace(/@import url\([^)]*\);/g, '');
  } else if (ctx.path === '/device/auth' && ctx.status === 200 && config.device_interval) {
    ctx.body = { ...ctx.body, interval: config.device_interval };
  }
});

provider.on('server_error', (ctx, error) => console.error('server_error', error));

provider.listen(config.port, '127.0.0.1', () => {
  console.log(`listening on ${issuer}`);
});
