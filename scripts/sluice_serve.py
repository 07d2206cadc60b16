"""Starting `sluice serve` for the benchmark scripts (scripts/bench-*.py)."""

import os
import subprocess


def serve(sluice, config_text, workdir):
    """`sluice serve` on a free loopback port with `config_text` as its
    sluice.toml (written in `workdir`): the child, and its (host, port)."""
    config = os.path.join(workdir, "sluice.toml")
    with open(config, "w") as f:
        f.write(config_text)
    child = subprocess.Popen(
        [sluice, "serve", "--listen", "127.0.0.1:0", "--config", config],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "SLUICE_LOG": "warn"},
    )
    for line in child.stderr:
        if "http://" in line and "/mcp" in line:
            url = line[line.index("http://") :].split()[0]
            host, port = url.removeprefix("http://").split("/")[0].rsplit(":", 1)
            return child, (host, int(port))
    raise SystemExit("sluice did not say where it listens")
