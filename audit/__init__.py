"""An append-only audit log of administrative actions (publish, memberships, exports, tokens)."""
