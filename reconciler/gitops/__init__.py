"""From git to change sets: polling, staging, applying, approvals."""
