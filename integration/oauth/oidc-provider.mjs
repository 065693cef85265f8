// A real OpenID provider for the sign-in tests: panva's oidc-provider (an
// OpenID Certified implementation) with its development login form, which
// takes any password. Usage: node oidc-provider.mjs PORT REDIRECT_URI
// It registers one confidential client, kernel-mcp, with REDIRECT_URI;
// alice and bob are in the group mcp-users, anyone else in none.
import Provider from 'oidc-provider';

const [port, redirect] = process.argv.slice(2);
if (!port || !redirect) {
  console.error('usage: node oidc-provider.mjs PORT REDIRECT_URI');
  process.exit(2);
}
const groups = { alice: ['mcp-users'], bob: ['mcp-users'] };
const provider = new Provider(`http://127.0.0.1:${port}`, {
  clients: [{
    client_id: 'kernel-mcp',
    client_secret: 'kernel-mcp-test-secret',
    redirect_uris: [redirect],
    grant_types: ['authorization_code'],
    response_types: ['code'],
  }],
  claims: { openid: ['sub'], profile: ['preferred_username', 'groups'] },
  // The user's claims in the ID token itself, not only at userinfo.
  conformIdTokenClaims: false,
  pkce: { required: () => true },
  cookies: { keys: ['oauth-test-cookie-key'] },
  features: { devInteractions: { enabled: true } },
  async findAccount(ctx, id) {
    return {
      accountId: id,
      async claims() {
        return { sub: id, preferred_username: id, groups: groups[id] ?? [] };
      },
    };
  },
});
process.on('SIGTERM', () => process.exit(0));
provider.listen(Number(port), '127.0.0.1', () => {
  console.log(`oidc-provider listening at http://127.0.0.1:${port}`);
});
