"""A pod's streams in the fake API: its log (`follow` until the container ended), `attach` and
`portforward` over websockets with the channel protocols kube-rs speaks (`v5.channel.k8s.io`,
`v4.channel.k8s.io`: each binary frame starts with its channel; attach: 0 stdin, 1 stdout,
2 stderr, 3 the ending status, 255 closes a channel (v5); portforward: per port a data and an
error channel, each opened by a frame of the port, two bytes little-endian)."""

import asyncio
import json
import struct

from aiohttp import WSMsgType, web

from store import ApiError

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")


def failure(e):
    return web.json_response(e.status(), status=e.code)


def pod_and_runtime(request):
    """The pod a stream path names and its container's runtime (`None` before it started)."""
    store, kubelet = request.app["store"], request.app["kubelet"]
    m = request.match_info
    pod = store.get("pods", m["ns"], m["name"])
    container = pod["spec"]["containers"][0]["name"]
    wanted = request.query.get("container", container)
    if wanted != container:
        raise ApiError(400, "BadRequest", f'container {wanted} is not valid for pod {m["name"]}')
    return pod, kubelet.runtimes.get(pod["metadata"]["uid"])


async def entries(runtime, start):
    """The log entries from index `start` on, as they come, until the container ended."""
    sent = start
    while True:
        async with runtime.changed:
            await runtime.changed.wait_for(lambda: len(runtime.log) > sent or runtime.done)
            chunk, ended = runtime.log[sent:], runtime.done
        sent += len(chunk)
        for entry in chunk:
            yield entry
        if ended and sent == len(runtime.log):
            return


async def log(request):
    """`GET .../pods/NAME/log`: stdout and stderr interleaved as read; `follow` streams it until
    the container ends; `tailLines` keeps the last lines; a previous container never exists."""
    try:
        pod, runtime = pod_and_runtime(request)
        q, name = request.query, pod["metadata"]["name"]
        if q.get("previous") == "true":
            raise ApiError(400, "BadRequest", f'previous terminated container in pod "{name}" not found')
        if runtime is None or (runtime.proc is None and not runtime.done):
            raise ApiError(400, "BadRequest", f'container in pod "{name}" is waiting to start: ContainerCreating')
    except ApiError as e:
        return failure(e)
    if q.get("follow") != "true":
        text = b"".join(chunk for _, chunk in runtime.log)
        if q.get("tailLines"):
            text = b"".join(text.splitlines(keepends=True)[-int(q["tailLines"]):])
        return web.Response(body=text, content_type="text/plain")
    response = web.StreamResponse()
    response.content_type = "text/plain"
    await response.prepare(request)
    async for _, chunk in entries(runtime, 0):
        await response.write(chunk)
    await response.write_eof()
    return response


def running(request):
    pod, runtime = pod_and_runtime(request)
    if runtime is None or runtime.proc is None or runtime.done:
        raise ApiError(400, "BadRequest", f'container in pod "{pod["metadata"]["name"]}" is not running')
    return pod, runtime


async def attach(request):
    """`attach`: frames on channel 0 go to the container's stdin (closed by channel 255's
    close of it, or when the session ends with `stdinOnce`); new output goes out on 1 and 2;
    when the container ends its status goes on 3 and the websocket closes."""
    try:
        pod, runtime = running(request)
    except ApiError as e:
        return failure(e)
    q = request.query
    want = {s for s in ("stdout", "stderr") if q.get(s) == "true"}
    ws = web.WebSocketResponse(protocols=PROTOCOLS)
    await ws.prepare(request)

    async def output():
        async for stream, chunk in entries(runtime, len(runtime.log)):
            if stream in want:
                await ws.send_bytes(bytes([1 if stream == "stdout" else 2]) + chunk)

    async def receive():
        async for msg in ws:
            if msg.type != WSMsgType.BINARY or not msg.data:
                continue
            channel, data = msg.data[0], msg.data[1:]
            if channel == 0 and q.get("stdin") == "true" and not runtime.stdin_closed:
                try:
                    runtime.proc.stdin.write(data)
                    await runtime.proc.stdin.drain()
                except (BrokenPipeError, ConnectionResetError):
                    runtime.stdin_closed = True
            elif channel == 255 and data[:1] == b"\x00":
                runtime.close_stdin()

    ended, receiving = asyncio.ensure_future(output()), asyncio.ensure_future(receive())
    done, _ = await asyncio.wait({ended, receiving}, return_when=asyncio.FIRST_COMPLETED)
    if ended in done:
        code = runtime.proc.returncode
        receiving.cancel()
        try:
            await ws.send_bytes(b"\x03" + json.dumps(exit_status(code)).encode())
            await ws.close()
        except ConnectionError:
            pass  # the client left first
    else:
        ended.cancel()
        if pod["spec"]["containers"][0].get("stdinOnce"):
            runtime.close_stdin()
    return ws


def exit_status(code):
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {"metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
            "message": f"command terminated with non-zero exit code: {code}",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}


async def portforward(request):
    """`portforward?ports=P`: one TCP connection here to the port the pod's process listens
    on for P, carried on data channel 2i, with error channel 2i+1; each opened by a frame of P."""
    try:
        _pod, runtime = running(request)
        ports = [int(p) for p in request.query.get("ports", "").split(",") if p]
        if not ports:
            raise ApiError(400, "BadRequest", "fake API: no ports")
    except (ApiError, ValueError) as e:
        return failure(e if isinstance(e, ApiError) else ApiError(400, "BadRequest", str(e)))
    ws = web.WebSocketResponse(protocols=PROTOCOLS)
    await ws.prepare(request)
    writers = {}
    for i, port in enumerate(ports):
        for channel in (2 * i, 2 * i + 1):
            await ws.send_bytes(bytes([channel]) + struct.pack("<H", port))
        try:
            reader, writer = await asyncio.open_connection(runtime.address, port)
        except OSError as e:
            await ws.send_bytes(bytes([2 * i + 1]) + f"fake API: port {port}: {e}".encode())
            continue
        writers[2 * i] = writer
        asyncio.ensure_future(pump(reader, ws, 2 * i))
    async for msg in ws:
        if msg.type == WSMsgType.BINARY and len(msg.data) > 1 and msg.data[0] in writers:
            try:
                writers[msg.data[0]].write(msg.data[1:])
                await writers[msg.data[0]].drain()
            except ConnectionError:
                break  # the pod closed the connection; so does the websocket
    for writer in writers.values():
        writer.close()
    return ws


async def pump(reader, ws, channel):
    """The pod's bytes on `channel` until it closes the connection; then the websocket closes
    (unless the client closed it first)."""
    try:
        while data := await reader.read(65536):
            await ws.send_bytes(bytes([channel]) + data)
        await ws.close()
    except ConnectionError:
        pass
