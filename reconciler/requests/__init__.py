"""What is asked for, and the approvals that gate it: change sets and applying them, approval
rules and decisions, the actions people request (rollback, promote, redeploy, cancel), and
the policies that refuse a request at once (freezes, the concurrency cap)."""
