"""The access guard: Envoy's HTTP external-authorization service for AppInstances.

Envoy Gateway sends every request of an instance to the guard at
`/instances/<system namespace>/<instance>` followed by the original path. The guard answers
200 (allow, with identity headers for Envoy to add upstream), 401 (no valid identity) or 403
(not allowed) or 503 (overloaded, at once), from the grant the program wrote for that
instance and the verified OIDC ID token. Every error denies.

Modules, from the wire inwards:

- `main`: the console entry point (`magicstick-access-guard`);
- `settings`: command-line flags with environment fallbacks, validated;
- `server`: uvicorn on uvloop, bounded: connection limit, request deadline, idle timeout, drain;
- `app`: the ASGI callable, one answer and one line of log per decision, `/healthz`;
- `decision`: the decision table, `Guard.decide`, and the pure `authorize`;
- `verification`: the verified-token cache and the bounded verification pool;
- `tokens`: ID token verification (PyJWT) over `keys`, the issuer's key set cache;
- `grants`: the grant format and the directory store that follows ConfigMap updates.
"""
