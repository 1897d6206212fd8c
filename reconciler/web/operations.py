"""``/healthz`` and ``/metrics``: for the orchestrator and the monitoring, not for people."""

from __future__ import annotations

import logging
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from sqlalchemy import text

from reconciler.web import models
from reconciler.web.appstate import AppState, get_state
from reconciler.web.metrics import CONTENT_TYPE

log = logging.getLogger("nebula.web")
router = APIRouter(tags=["operations"])
State = Annotated[AppState, Depends(get_state)]


def _database_reachable(state: AppState) -> bool:
    try:
        with state.ctx.db.engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except Exception as exc:  # any failure means "not reachable", told as such
        log.warning("health: the database did not answer", extra={"reason": str(exc)})
        return False
    return True


@router.get(
    "/healthz",
    response_model=models.Health,
    responses={503: {"model": models.Health, "description": "the database cannot be reached"}},
    summary="Up, and the database answers",
)
async def healthz(state: State) -> Any:
    if await run_in_threadpool(_database_reachable, state):
        return {"status": "ok", "database": "ok"}
    return JSONResponse({"status": "unavailable", "database": "unreachable"}, status_code=503)


@router.get(
    "/metrics",
    response_class=Response,
    responses={
        200: {"content": {CONTENT_TYPE.split(";")[0]: {}}, "description": "Prometheus text"}
    },
    summary="Prometheus metrics",
)
async def metrics(state: State) -> Response:
    body = await run_in_threadpool(state.metrics.render)
    return Response(body, media_type=CONTENT_TYPE)
