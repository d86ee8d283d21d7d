"""`dyafdb verify`: a results folder checked against its design, by content (docs/formats.md, "Provenance")."""
