"""`mdrecall hook EVENT` as a process: payload on stdin, the agent's answer on stdout.

Asks a warm server first (mdrecall.agents.serve); without one, runs the hook here (mdrecall.agents.hooks).
Imports only what the call needs: a hook runs before every prompt.
"""

from __future__ import annotations

import os
import sys

from mdrecall.agents.hooks import HookResult, HookRunner, canonical_event, read_payload
from mdrecall.errors import MdrecallError


def run_hook_process(
    event: str,
    stdin_text: str,
    workspace: str | os.PathLike[str] | None = None,
    agent: str | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    config: str | os.PathLike[str] | None = None,
    openclaw: bool = False,
    db: str | os.PathLike[str] | None = None,
) -> int:
    """`mdrecall hook EVENT` as a process: payload from stdin, answer on stdout, one line on stderr for an
    error (exit code 1). Asks a warm server first (mdrecall.agents.serve); without one, runs here.

    Without `--workspace` the workspace is the payload's `cwd` only when it already holds memory, else the
    default memory home (mdrecall.agents.home): a hook never creates memory files next to someone's code."""
    from mdrecall.agents import serve
    from mdrecall.agents.home import choose_workspace
    from mdrecall.config.paths import DEFAULT_AGENT_ID, resolve_state_dir

    try:
        name = canonical_event(event)
        payload = read_payload(stdin_text)
        cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
        chosen: str | os.PathLike[str] | None = workspace
        if not openclaw:
            chosen, _why = choose_workspace(workspace, cwd, resolve_state_dir(state_dir))
        answer = None
        if not openclaw and db is None and chosen is not None and os.path.isdir(chosen):
            identity = serve.identity_for(
                chosen,
                (agent or DEFAULT_AGENT_ID).strip(),
                resolve_state_dir(state_dir),
                serve.default_config_file(chosen, config),
            )
            answer = serve.call(identity, {"op": "hook", "event": name, "payload": payload})
        if answer is not None:
            if not answer.get("ok"):
                raise MdrecallError(str(answer.get("error") or "the warm server failed"))
            result = HookResult(str(answer.get("stdout") or ""), list(answer.get("actions") or []))
            result.stderr = [str(line) for line in answer.get("stderr") or []]
        else:
            if openclaw:
                from mdrecall.config.openclaw import resolve_openclaw_settings

                settings, warnings = resolve_openclaw_settings(
                    agent_id=agent, workspace=chosen, config_path=config, state_dir=state_dir, db_path=db
                )
                for warning in warnings:
                    sys.stderr.write(f"warning: {warning}\n")
            else:  # not through config.openclaw: its JSON5 reader costs ~50 ms a hook does not need
                from mdrecall.config.settings import resolve_settings

                settings = resolve_settings(chosen, agent, state_dir, config, db)
                if settings.trust_notice:
                    sys.stderr.write(f"warning: {settings.trust_notice}\n")
            runner = HookRunner(settings)
            try:
                result = runner.run(name, payload)
            finally:
                runner.close()
    except MdrecallError as err:
        sys.stderr.write(f"error: {' '.join(str(err).split())}\n")
        return 1
    for line in result.stderr or []:
        sys.stderr.write(line + "\n")
    if result.stdout:
        sys.stdout.write(result.stdout + ("" if result.stdout.endswith("\n") else "\n"))
    return 0
