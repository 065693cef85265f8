// Package oauth makes kernel-mcp an OAuth 2.1 protected resource with an
// authorization server of its own, which delegates the sign-in to another
// identity provider (JupyterHub, or any OpenID Connect provider).
//
//	srv, err := oauth.New(oauth.Config{
//		Issuer:   "https://kernels.example.org",
//		Resource: "https://kernels.example.org/mcp",
//		StateDir: "/var/lib/kernel-mcp/oauth",
//		Login:    upstream, // an OIDC provider or a JupyterHub
//	})
//	if err != nil { ... }
//	defer srv.Close()
//	mux.Handle("/", srv.Handler())                    // metadata, authorize, token, revoke, consent
//	mux.Handle("/mcp", srv.RequireToken(mcpHandler))   // 401 with the metadata's address, else the user in ctx
//
// The protocol work (authorization and token endpoints, PKCE checks, JWT
// signing, revocation parsing) is done by zitadel/oidc's op package, an
// OpenID Certified provider library; this package supplies its storage
// (clients, keys and grants kept in the state folder, 0600, so they survive
// a restart), the rules kernel-mcp adds (PKCE with S256 only, tokens bound
// to the one resource, refresh-token rotation with reuse detection), client
// registration by Client ID Metadata Document and by Dynamic Client
// Registration, the sign-in through the upstream provider, and the consent
// page. It never sees a password: the upstream provider does.
//
// The resource side checks each access token's signature, issuer, audience
// (the resource, RFC 8707), expiry, scope and revocation, and passes no token
// on: the handler behind RequireToken sees only the user's name.
package oauth
