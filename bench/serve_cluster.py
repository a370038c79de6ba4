"""`lumen serve` on a two-node Ray cluster on this machine, and what killing a replica costs.

    PYTHONPATH=build/python .venv/bin/python bench/serve_cluster.py [--seconds 30] [--clients 4]

1. `ray start --head` and `ray start --address` (a worker node) on loopback, one CPU each.
2. `lumen serve MODEL --address HEAD --replicas 2 --threads 1`: Ray Serve places one replica on
   each node (checked through Ray's state API). The model file is then moved away, so the
   replica replacing a killed one loads the copy shipped through Ray's object store.
3. Clients send requests for `--seconds`; a third of the way in, one replica's process is killed
   (SIGKILL). Printed: the requests that failed, the time until Ray Serve had two healthy replicas
   again, and, for clients that retry a failed request (inference is idempotent) up to 10 times,
   whether every request was finally answered with the right output.
"""

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def sh(*cmd, env=None):
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: {done.stderr[-2000:]}")
    return done.stdout


def replicas(name):
    """The live Serve replicas of model `name` (Ray's state API: the head runs the dashboard)."""
    from ray.util.state import list_actors

    return [a for a in list_actors(filters=[("state", "=", "ALIVE")], limit=1000)
            if a.class_name.startswith("ServeReplica:lumen:model_" + name)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--port", type=int, default=8777)
    parser.add_argument("--ray-port", type=int, default=6390)
    args = parser.parse_args()
    # Ray's token authentication (the token in ~/.ray/auth_token) on every node and client; read
    # when ray is imported.
    os.environ["RAY_AUTH_MODE"] = "token"
    import httpx
    import ray

    import lumen
    import models as suite
    from serve_load import binary_request, post_ok, sample_feeds, with_symbolic_batch

    tmp = tempfile.mkdtemp(prefix="lumen_cluster_")
    model = os.path.join(tmp, "minilm.onnx")
    with_symbolic_batch(suite.model_path(suite.SUITE["minilm"]), model)
    head = f"127.0.0.1:{args.ray_port}"
    ray_bin = os.path.join(os.path.dirname(sys.executable), "ray")
    env = dict(os.environ, RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S="60")
    sh(ray_bin, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={args.ray_port}",
       "--num-cpus=1", "--include-dashboard=true", "--dashboard-host=127.0.0.1", env=env)
    server = None
    try:
        sh(ray_bin, "start", f"--address={head}", "--node-ip-address=127.0.0.1", "--num-cpus=1",
           env=env)
        ray.init(address=head, logging_level="ERROR", _node_ip_address="127.0.0.1")
        for _ in range(60):
            nodes = [n for n in ray.nodes() if n["Alive"]]
            if len(nodes) == 2:
                break
            time.sleep(1)
        print(f"cluster: {len(nodes)} nodes alive", flush=True)
        server = subprocess.Popen(
            [sys.executable, "-m", "lumen", "serve", model, "--address", head, "--replicas", "2",
             "--threads", "1", "--port", str(args.port)],
            stdout=open(os.path.join(tmp, "serve.log"), "w"), stderr=subprocess.STDOUT, env=env,
            start_new_session=True)
        base = f"http://127.0.0.1:{args.port}"
        deadline = time.time() + 300
        while True:
            try:
                if httpx.get(base + "/v2/health/ready", timeout=30).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.time() > deadline or server.poll() is not None:
                sys.exit(f"lumen serve did not come up; see {tmp}/serve.log")
            time.sleep(1)
        placed = replicas("minilm")
        print(f"replicas: {len(placed)} on {len({a.node_id for a in placed})} nodes", flush=True)
        # The model leaves its path: the replica replacing the killed one loads the copy that
        # `lumen serve` shipped through Ray's object store, as on a node without the file.
        moved = os.path.join(tmp, "elsewhere.onnx")
        os.rename(model, moved)

        compiled = lumen.load_onnx(moved).compile(num_threads=1)
        inputs = [sample_feeds(compiled.inputs, 1, seed=s) for s in range(8)]
        wants = [compiled.run(f)[0] for f in inputs]
        bodies = [binary_request(f) for f in inputs]
        url = base + "/v2/models/minilm/infer"
        stats = {"sent": 0, "failed_first": 0, "answered": 0, "wrong": 0, "gave_up": 0,
                 "retries": 0}

        async def client(c, k, stop_at):
            i = k
            while time.perf_counter() < stop_at:
                body, headers = bodies[i % len(bodies)]
                stats["sent"] += 1
                for attempt in range(11):
                    r = await post_ok(c, url, body, headers)
                    if r:
                        n = int(r.headers["inference-header-content-length"])
                        got = np.frombuffer(r.content[n:], np.float32).reshape(wants[0].shape)
                        if not np.allclose(got, wants[i % len(bodies)], rtol=1e-4, atol=1e-4):
                            stats["wrong"] += 1
                        stats["answered"] += 1
                        break
                    if attempt == 0:
                        stats["failed_first"] += 1
                    stats["retries"] += 1
                    await asyncio.sleep(0.2 * (attempt + 1))
                else:
                    stats["gave_up"] += 1
                i += args.clients

        async def run_with_kill():
            async with httpx.AsyncClient(timeout=60) as c:
                stop_at = time.perf_counter() + args.seconds
                tasks = [asyncio.create_task(client(c, k, stop_at)) for k in range(args.clients)]
                await asyncio.sleep(args.seconds / 3)
                victim = replicas("minilm")[0]
                killed = time.perf_counter()
                os.kill(victim.pid, signal.SIGKILL)
                print(f"killed replica pid {victim.pid} on node {victim.node_id[:8]}", flush=True)
                back = None
                while back is None and time.perf_counter() - killed < 120:
                    await asyncio.sleep(0.5)
                    alive = await asyncio.to_thread(replicas, "minilm")
                    if len(alive) == 2 and victim.pid not in {a.pid for a in alive}:
                        back = time.perf_counter() - killed
                await asyncio.gather(*tasks)
                return back

        back = asyncio.run(run_with_kill())
        print(json.dumps(stats))
        print(f"requests: {stats['sent']}, failed at first try: {stats['failed_first']}, answered "
              f"after retries: {stats['answered']} ({stats['wrong']} wrong), gave up: "
              f"{stats['gave_up']}; replica back after "
              f"{'n/a' if back is None else f'{back:.1f} s'}")
    finally:
        if server and server.poll() is None:
            os.killpg(server.pid, signal.SIGINT)
            try:
                server.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
        subprocess.run([ray_bin, "stop", "--force"], capture_output=True)


if __name__ == "__main__":
    main()
