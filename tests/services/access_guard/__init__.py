"""Tests of the access guard, run as a real process behind real HTTP.

Helpers: `issuer` (a local OIDC issuer: keys, a JWKS endpoint that can go down, minted
tokens), `volume` (a grants directory written the way the kubelet writes a ConfigMap
volume), `process` (the guard as a subprocess on a free loopback port).
"""
