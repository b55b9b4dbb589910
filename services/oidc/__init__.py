"""OpenID Connect ID tokens for the services behind the shared Gateway's single sign-on.

One implementation, used by the access guard and the dashboard alike: the issuer's key set
(`keys`), the verification of one token (`tokens`), and the bounded cache and pool that let an
event loop verify without waiting (`verification`).
"""
