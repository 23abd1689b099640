"""ScriptFlow (TypeAgent's PowerShell recipes) through ``pwsh``, in a constrained runspace.

``await run_pwsh(body, parameters, sandbox, timeout_ms=..., on_log=...)`` runs the recipe's
script body inside a runspace built from the recipe's ``sandbox`` (``allowedCmdlets`` minus
the seed's always-blocked ones, ``ConstrainedLanguage``, network cmdlets removed unless
``networkAccess``), with ``parameters`` bound as the script's parameters; the output is the
pipeline's result as JSON (one value, or a list). ``pwsh`` must be on PATH
(:func:`pwsh_binary`); without it the ``script`` kind refuses the node at validation
(``script_interpreter_missing``). The child process is killed at the deadline.

The host script mirrors TypeAgent's ``scriptHost.ps1``: it is run with ``-NoProfile
-NonInteractive`` and reads the body, parameters and policy from files it is given.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from engine.code.errors import CodeError, CodeTimeout

__all__ = ["pwsh_binary", "run_pwsh", "ALWAYS_BLOCKED", "NETWORK_CMDLETS", "PWSH_HINT"]

#: How to get ``pwsh``, said wherever its absence stops a script.
PWSH_HINT = "install PowerShell 7 (https://aka.ms/powershell) to run it"

#: Never permitted, whatever the recipe's sandbox lists (seed 000).
ALWAYS_BLOCKED = (
    "Invoke-Expression",
    "New-Object",
    "Add-Type",
    "Start-Process",
    "Set-ExecutionPolicy",
    "Register-ScheduledTask",
    "Register-ObjectEvent",
    "Register-EngineEvent",
    "Register-WmiEvent",
    "Unregister-ScheduledTask",
    "Unregister-Event",
    "Enable-PSRemoting",
    "Enter-PSSession",
    "New-PSSession",
)
#: Removed unless the sandbox's ``networkAccess`` is true.
NETWORK_CMDLETS = ("Invoke-WebRequest", "Invoke-RestMethod", "Test-NetConnection", "Test-Connection")

_HOST = r"""
param([string]$Folder)
$ErrorActionPreference = 'Stop'
$policy = Get-Content -Raw (Join-Path $Folder 'policy.json') | ConvertFrom-Json
$params = Get-Content -Raw (Join-Path $Folder 'params.json') | ConvertFrom-Json -AsHashtable
$body = Get-Content -Raw (Join-Path $Folder 'script.ps1')
$default = [System.Management.Automation.Runspaces.InitialSessionState]::CreateDefault2()
$iss = [System.Management.Automation.Runspaces.InitialSessionState]::Create()
foreach ($entry in $default.Commands) {
  if ($entry.CommandType -eq 'Cmdlet' -and @($policy.allowed) -contains $entry.Name) { $iss.Commands.Add($entry) }
}
foreach ($entry in $default.Providers) { $iss.Providers.Add($entry) }
$iss.LanguageMode = [System.Management.Automation.PSLanguageMode]::ConstrainedLanguage
$runspace = [System.Management.Automation.Runspaces.RunspaceFactory]::CreateRunspace($iss)
$runspace.Open()
$ps = [System.Management.Automation.PowerShell]::Create()
$ps.Runspace = $runspace
[void]$ps.AddScript($body)
foreach ($key in $params.Keys) { [void]$ps.AddParameter($key, $params[$key]) }
try {
  $result = $ps.Invoke()
  foreach ($record in $ps.Streams.Error) { [Console]::Error.WriteLine($record.ToString()) }
  if ($ps.HadErrors -and $ps.Streams.Error.Count -gt 0) { exit 3 }
  $values = @($result | ForEach-Object { $_ })
  if ($values.Count -eq 1) { $out = $values[0] } else { $out = $values }
  [Console]::Out.WriteLine('@@flowdesk-result@@' + (ConvertTo-Json -InputObject $out -Depth 8 -Compress))
} catch {
  [Console]::Error.WriteLine($_.Exception.Message)
  exit 2
}
"""

MARK = "@@flowdesk-result@@"


def pwsh_binary() -> str | None:
    return shutil.which("pwsh")


def allowed_cmdlets(sandbox: Mapping[str, Any] | None) -> list[str]:
    sandbox = sandbox or {}
    listed = [str(c) for c in sandbox.get("allowedCmdlets") or [] if isinstance(c, str)]
    blocked = set(ALWAYS_BLOCKED) | (set() if sandbox.get("networkAccess") else set(NETWORK_CMDLETS))
    return [c for c in listed if c not in blocked]


async def run_pwsh(
    body: str,
    parameters: Mapping[str, Any],
    sandbox: Mapping[str, Any] | None,
    *,
    timeout_ms: int,
    on_log: Callable[[str, str], None] | None = None,
) -> Any:
    binary = pwsh_binary()
    if binary is None:
        raise CodeError(
            f"script_interpreter_missing: PowerShell scripts need pwsh, which is not installed; {PWSH_HINT}"
        )
    folder = Path(tempfile.mkdtemp(prefix="flowdesk-pwsh-"))
    try:
        (folder / "script.ps1").write_text(body, encoding="utf-8")
        (folder / "params.json").write_text(json.dumps(dict(parameters)), encoding="utf-8")
        (folder / "policy.json").write_text(json.dumps({"allowed": allowed_cmdlets(sandbox)}), encoding="utf-8")
        (folder / "host.ps1").write_text(_HOST, encoding="utf-8")
        proc = await asyncio.create_subprocess_exec(
            binary,
            "-NoProfile",
            "-NonInteractive",
            "-File",
            str(folder / "host.ps1"),
            str(folder),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=str(folder),
            start_new_session=True,
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(), max(0.05, timeout_ms / 1000))
        except TimeoutError:
            raise CodeTimeout(f"timed out after {timeout_ms} ms (the script was stopped)") from None
        finally:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    if hasattr(os, "killpg"):
                        os.killpg(proc.pid, signal.SIGKILL)
                    else:  # pragma: no cover - Windows
                        proc.kill()
                with contextlib.suppress(ProcessLookupError):
                    await proc.wait()
        result: Any = None
        for line in out.decode("utf-8", "replace").splitlines():
            if line.startswith(MARK):
                result = json.loads(line[len(MARK) :] or "null")
            elif on_log is not None:
                on_log("stdout", line)
        errors = err.decode("utf-8", "replace").splitlines()
        if on_log is not None:
            for line in errors:
                on_log("stderr", line)
        if proc.returncode:
            last = next((ln for ln in reversed(errors) if ln.strip()), f"exit status {proc.returncode}")
            raise CodeError(f"the PowerShell script failed: {last}")
        return result
    finally:
        shutil.rmtree(folder, ignore_errors=True)
