"""The organization: members and tokens, policies, freeze windows, projects and secrets."""
