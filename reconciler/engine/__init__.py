"""Deployments: releases, queueing and supersession, the stages, the reconcile tick."""
