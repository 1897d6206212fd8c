"""Deployments: releases, requests (deploy, rollback, promote, redeploy, cancel), the tick."""
