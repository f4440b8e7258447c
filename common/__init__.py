"""The bottom layer: what every app shares and nothing of ours is imported by — the application
error types and their two mappings (API and pages), and the user-level access rule (staff)."""
