"""A fake Kubernetes API server for microshard's tests, over plain HTTP on a loopback port: the
REST calls microshard makes (`store.py`), pods run by a fake kubelet as local processes
(`kubelet.py`), their logs, `attach` and `portforward` over websockets (`streams.py`), and a few
`/_fake/` calls for the tests (what is left, expiring leases). Not a Kubernetes: nothing here
says how a real API server, scheduler or kubelet behaves.

    python3 server.py --command microshard=/path/to/microshard [--command mongod=...]
                      [--run-statefulsets]

It prints `listening on 127.0.0.1:PORT` once it answers, and exits (killing every process it
started and removing their directories) when its stdin closes or on SIGTERM."""

import argparse
import asyncio
import datetime
import json
import os
import signal
import sys
import tempfile

from aiohttp import web

import streams
from kubelet import Kubelet
from store import RESOURCES, ApiError, Store

VERSION = {
    "major": "1", "minor": "30", "gitVersion": "v1.30.0-fake", "gitCommit": "fake",
    "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go-fake",
    "compiler": "fake", "platform": "linux/amd64",
}


def answer(obj, status=200):
    return web.json_response(obj, status=status)


def failure(e):
    return answer(e.status(), e.code)


def resource(request):
    """The plural, namespace and name a REST path names, checked against its group/version."""
    m = request.match_info
    plural, group_version = m["plural"], m.get("gv", "v1")
    if plural not in RESOURCES or RESOURCES[plural][0] != group_version:
        raise ApiError(404, "NotFound", f"fake API: no resource {group_version}/{plural}")
    namespaced = RESOURCES[plural][2]
    ns = m.get("ns", "")
    if namespaced != bool(ns) and not (namespaced and request.method == "GET" and "name" not in m):
        raise ApiError(404, "NotFound", f"fake API: {plural} is {'' if namespaced else 'not '}namespaced")
    return plural, ns, m.get("name")


async def body(request):
    text = await request.text()
    return json.loads(text) if text.strip() else {}


def routes(app):
    store = app["store"]

    async def collection(request):
        try:
            plural, ns, _ = resource(request)
            if request.method == "POST":
                return answer(store.create(plural, ns, await body(request)), 201)
            api_version, kind, _ = RESOURCES[plural]
            items = store.list(plural, ns or None, request.query.get("labelSelector"))
            if request.method == "DELETE":
                # deletecollection: each selected object as its own DELETE.
                options = await body(request)
                if "propagationPolicy" in request.query:
                    options["propagationPolicy"] = request.query["propagationPolicy"]
                for o in items:
                    store.delete(plural, o["metadata"].get("namespace"), o["metadata"]["name"], options)
            return answer({"apiVersion": api_version, "kind": kind + "List",
                           "metadata": {"resourceVersion": str(next(store.versions))},
                           "items": items})
        except ApiError as e:
            return failure(e)

    async def item(request):
        try:
            plural, ns, name = resource(request)
            if request.method == "GET":
                return answer(store.get(plural, ns, name))
            if request.method == "PATCH":
                if "merge-patch" not in request.content_type:
                    raise ApiError(415, "UnsupportedMediaType",
                                   f"fake API: only merge patches, not {request.content_type}")
                return answer(store.patch(plural, ns, name, await body(request)))
            if request.method == "DELETE":
                options = await body(request)
                if "propagationPolicy" in request.query:
                    options["propagationPolicy"] = request.query["propagationPolicy"]
                return answer(store.delete(plural, ns, name, options))
            raise ApiError(405, "MethodNotAllowed", f"fake API: {request.method}")
        except ApiError as e:
            return failure(e)

    async def version(_request):
        return answer(VERSION)

    r = app.router
    r.add_get("/version", version)
    for prefix in ("/api/{gv:v1}", "/apis/{gv:[a-z0-9.]+/v1}"):
        r.add_route("*", prefix + "/namespaces/{ns}/pods/{name}/log", streams.log)
        r.add_get(prefix + "/namespaces/{ns}/pods/{name}/attach", streams.attach)
        r.add_get(prefix + "/namespaces/{ns}/pods/{name}/portforward", streams.portforward)
        r.add_route("*", prefix + "/namespaces/{ns}/{plural}", collection)
        r.add_route("*", prefix + "/namespaces/{ns}/{plural}/{name}", item)
        r.add_route("*", prefix + "/{plural}", collection)
        r.add_route("*", prefix + "/{plural}/{name}", item)
    r.add_get("/_fake/state", fake_state)
    r.add_post("/_fake/expire-leases", expire_leases)


async def fake_state(request):
    """What a test asserts on: every object (`kind namespace/name`) whose labels match
    `labelSelector`, and how many pod processes still run."""
    store, selector = request.app["store"], request.query.get("labelSelector")
    objects = [f"{o['kind']} {o['metadata'].get('namespace', '')}/{o['metadata']['name']}"
               for plural in RESOURCES for o in store.list(plural, None, selector)]
    return answer({"objects": objects, "processes": request.app["kubelet"].running()})


async def expire_leases(request):
    """Every Lease's renewal moved an hour into the past: its holder as good as dead."""
    past = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1))
    stamp = past.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    leases = request.app["store"].list("leases")
    for lease in leases:
        lease.setdefault("spec", {}).update(renewTime=stamp, acquireTime=stamp)
    return answer({"expired": len(leases)})


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--command", action="append", default=[],
                        help="NAME=PATH: a container whose first word is NAME runs PATH")
    parser.add_argument("--run-statefulsets", action="store_true",
                        help="run StatefulSet pods too (else they stay Pending)")
    args = parser.parse_args()
    commands = dict(c.split("=", 1) for c in args.command)
    store = Store()
    store.create("namespaces", "", {"metadata": {"name": "default"}})
    root = tempfile.mkdtemp(prefix="fake-kube-")
    app = web.Application()
    app["store"] = store
    app["kubelet"] = Kubelet(store, commands, root, args.run_statefulsets)
    routes(app)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    print(f"listening on 127.0.0.1:{port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    stdin_closed = loop.run_in_executor(None, sys.stdin.buffer.read)
    stdin_closed.add_done_callback(lambda _: stop.set())
    await stop.wait()
    await app["kubelet"].shutdown()
    await runner.cleanup()
    os._exit(0)


if __name__ == "__main__":
    asyncio.run(main())
