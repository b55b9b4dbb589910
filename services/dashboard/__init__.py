"""The dashboard: the appliance's web console and its revision-checked API, behind single sign-on."""
