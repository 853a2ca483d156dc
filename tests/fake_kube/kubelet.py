"""The fake's controllers and kubelet: a Job makes its pods (Indexed: one per completion index,
with the index annotation), a StatefulSet makes `<name>-<i>`, a namespace's deletion deletes what
it holds, and the fake kubelet runs a pod's first container as a local process. An image is not
pulled: the container's first word (`microshard`, `mongod`) is looked up in the command map the
fake was started with. A test fake: it models the steps microshard waits for (Pending, Running,
terminated with an exit code) and nothing of scheduling, resources or real images."""

import asyncio
import base64
import ctypes
import hashlib
import itertools
import os
import random
import re
import shutil
import signal
import socket

from store import ApiError, now

INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"


def die_with_parent():
    """In the child, before exec: killed when the fake dies, whatever kills it."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def free(address, port):
    """Whether `port` can be listened on at `address` now."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((address, port))
            return True
        except OSError:
            return False


def image_id(image):
    """A fake digest: stable per image name, shaped as a registry reference."""
    repo = image.rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] else image
    return f"{repo}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


def field_ref(pod, path):
    """The downward API's `fieldRef` values the fake knows."""
    meta = pod["metadata"]
    m = re.fullmatch(r"metadata\.(annotations|labels)\['(.+)'\]", path)
    if m:
        return (meta.get(m.group(1)) or {}).get(m.group(2), "")
    return {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", ""),
        "metadata.uid": meta.get("uid", ""),
        "spec.nodeName": pod["spec"].get("nodeName", ""),
    }.get(path, "")


def expand(text, env):
    """Kubernetes' `$(VAR)` expansion in command, args and env (`$$` is a literal `$`)."""
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                  lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), text)


class Paths:
    """Container paths (volume mounts, `/tmp`) rewritten to the pod's directories here, in
    arguments, environment values and the files of Secret volumes: there is no mount namespace."""

    def __init__(self):
        self.map = []

    def add(self, inside, here):
        self.map.append((inside.rstrip("/"), here))
        self.map.sort(key=lambda m: -len(m[0]))

    def rewrite(self, text):
        """One pass, longest path first: a rewritten path is never rewritten again."""
        if not self.map:
            return text
        alternatives = "|".join(re.escape(inside) for inside, _ in self.map)
        pattern = r"(?:^|(?<=[\s=:]))(" + alternatives + r")(?=/|$|\s)"
        here = dict(self.map)
        return re.sub(pattern, lambda m: here[m.group(1)], text, flags=re.M)


class Runtime:
    """One running (or ended) container: its process, its log, its end."""

    def __init__(self, directory):
        self.dir = directory
        self.proc = None
        self.log = []  # (stream, bytes) in the order read
        self.changed = asyncio.Condition()
        self.done = False
        self.stdin_closed = False
        self.address = "127.0.0.1"  # the pod's own loopback address, for port-forwards

    async def append(self, stream, chunk):
        """Output read from `stream`, for the log and attach to follow."""
        async with self.changed:
            self.log.append((stream, chunk))
            self.changed.notify_all()

    async def finish(self):
        async with self.changed:
            self.done = True
            self.changed.notify_all()

    def close_stdin(self):
        """EOF on the container's stdin, once."""
        if self.proc and self.proc.stdin and not self.stdin_closed:
            self.stdin_closed = True
            self.proc.stdin.close()

    def signal(self, sig):
        """`sig` to the container's process group, if it still runs."""
        if self.proc and self.proc.returncode is None:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass


class Kubelet:
    """The controllers and the kubelet over `store`; `commands` maps a container's first word
    to the executable that stands in for it; pods run under `root`."""

    def __init__(self, store, commands, root, run_statefulsets):
        self.store, self.commands, self.root = store, commands, root
        self.run_statefulsets = run_statefulsets
        self.runtimes = {}  # pod uid -> Runtime
        self.hosts, self.hosts_file = {}, os.path.join(root, "hosts")  # server pod -> address
        self.write_hosts()
        self.tasks = set()
        self.nodes = itertools.count(1)
        # Pods get addresses in 127.<octet>.0.0/16, the octet drawn per fake: fakes of tests
        # running side by side rarely share a range, and a taken address is skipped anyway.
        self.octet, self.addresses = random.randint(64, 250), itertools.count(1)
        store.on_create = {"jobs": [self.job_created], "statefulsets": [self.set_created],
                           "pods": [self.pod_created]}
        store.on_delete = {"jobs": [self.owner_deleted], "statefulsets": [self.owner_deleted],
                           "pods": [self.pod_deleted], "namespaces": [self.namespace_deleted]}

    def spawn(self, coro):
        """A background task, kept referenced until it ends."""
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    # ---- controllers ------------------------------------------------------------------------

    def owned_pod(self, owner, name, template, annotations=None, extra_labels=None):
        """A pod from `template`, owned by `owner` (so deleting the owner finds it)."""
        meta = template.get("metadata") or {}
        labels = dict(meta.get("labels") or {}, **(extra_labels or {}))
        pod = {
            "metadata": {
                "name": name, "labels": labels,
                "annotations": dict(meta.get("annotations") or {}, **(annotations or {})),
                "ownerReferences": [{
                    "apiVersion": owner["apiVersion"], "kind": owner["kind"], "controller": True,
                    "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                }],
            },
            "spec": dict(template.get("spec") or {}),
        }
        self.store.create("pods", owner["metadata"]["namespace"], pod)

    def job_created(self, job):
        """A Job's pods, all at once; an Indexed Job's with their completion index."""
        spec, name = job.get("spec") or {}, job["metadata"]["name"]
        indexed = spec.get("completionMode") == "Indexed"
        for i in range(spec.get("parallelism") or spec.get("completions") or 1):
            annotations = {INDEX_ANNOTATION: str(i)} if indexed else {}
            labels = {"batch.kubernetes.io/job-name": name,
                      "batch.kubernetes.io/controller-uid": job["metadata"]["uid"]}
            if indexed:
                labels[INDEX_ANNOTATION] = str(i)
            suffix = f"{i}-" if indexed else ""
            pod_name = f"{name}-{suffix}{os.urandom(3).hex()[:5]}"
            self.owned_pod(job, pod_name, spec.get("template") or {}, annotations, labels)
        job["status"] = {"active": spec.get("parallelism") or 1, "startTime": now()}

    def set_created(self, sts):
        """A StatefulSet's pods `<name>-<i>`, each named in its Service's domain."""
        spec, name = sts.get("spec") or {}, sts["metadata"]["name"]
        for i in range(spec.get("replicas", 1)):
            template = dict(spec.get("template") or {})
            template["spec"] = dict(template.get("spec") or {}, hostname=f"{name}-{i}",
                                    subdomain=spec.get("serviceName", name))
            self.owned_pod(sts, f"{name}-{i}", template,
                           extra_labels={"statefulset.kubernetes.io/pod-name": f"{name}-{i}"})

    def owner_deleted(self, owner, options):
        """A Job's or StatefulSet's pods: deleted with it (`Background`, `Foreground`; a
        StatefulSet's default), or orphaned (`Orphan`; a Job's default through the API)."""
        ns, uid = owner["metadata"]["namespace"], owner["metadata"]["uid"]
        default = "Orphan" if owner["kind"] == "Job" else "Background"
        policy = options.get("propagationPolicy") or default
        for pod in self.store.list("pods", ns):
            refs = pod["metadata"].get("ownerReferences") or []
            if not any(r.get("uid") == uid for r in refs):
                continue
            if policy == "Orphan":
                pod["metadata"]["ownerReferences"] = [r for r in refs if r.get("uid") != uid]
            else:
                self.store.delete("pods", ns, pod["metadata"]["name"], {})
        return False

    def namespace_deleted(self, ns_obj, options):
        """Terminating at once, then everything in it deleted, then the namespace itself."""
        meta = ns_obj["metadata"]
        if meta.get("deletionTimestamp"):
            return True
        meta["deletionTimestamp"] = now()
        ns_obj["status"] = {"phase": "Terminating"}
        self.spawn(self.finalize_namespace(meta["name"]))
        return True

    async def finalize_namespace(self, ns):
        await asyncio.sleep(0.2)
        for plural, n, name in self.store.in_namespace(ns):
            if plural != "pods" and (plural, n, name) in self.store.objects:
                self.store.remove(plural, n, name)
        for pod in self.store.list("pods", ns):
            try:
                self.store.delete("pods", ns, pod["metadata"]["name"], {"gracePeriodSeconds": 0})
            except ApiError:
                pass
        while self.store.in_namespace(ns):
            await asyncio.sleep(0.05)
        self.store.remove("namespaces", "", ns)

    # ---- the kubelet ------------------------------------------------------------------------

    def pod_created(self, pod):
        self.spawn(self.start(pod["metadata"]["namespace"], pod["metadata"]["name"],
                              pod["metadata"]["uid"]))

    def runs(self, pod):
        owners = pod["metadata"].get("ownerReferences") or []
        return self.run_statefulsets or not any(o["kind"] == "StatefulSet" for o in owners)

    async def start(self, ns, name, uid):
        """Scheduled, then its container started: Pending, then Running (or failed to start)."""
        await asyncio.sleep(0.1)
        pod = self.store.objects.get(("pods", ns, name))
        if pod is None or pod["metadata"]["uid"] != uid or pod["metadata"].get("deletionTimestamp"):
            return
        if not self.runs(pod):
            self.store.update_status("pods", ns, name, {"phase": "Pending", "conditions": [{
                "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": "fake API: this fake kubelet runs no StatefulSet pods"}]})
            return
        node = pod["spec"].get("nodeName") or f"fake-node-{next(self.nodes)}"
        pod["spec"]["nodeName"] = node
        container = pod["spec"]["containers"][0]
        waiting = {"waiting": self.pull(container)}
        self.store.update_status("pods", ns, name, {
            "phase": "Pending", "hostIP": "127.0.0.1",
            "conditions": [{"type": "PodScheduled", "status": "True"}],
            "containerStatuses": [self.container_status(container, waiting, False)]})
        if waiting["waiting"]["reason"] != "ContainerCreating":
            return
        runtime = Runtime(os.path.join(self.root, f"{ns}.{name}.{uid[:8]}"))
        runtime.address = self.free_address(container)
        self.runtimes[uid] = runtime
        try:
            argv, env, cwd = self.command(pod, container, runtime)
            runtime.proc = await asyncio.create_subprocess_exec(
                *argv, env=env, cwd=cwd, start_new_session=True, preexec_fn=die_with_parent,
                stdin=asyncio.subprocess.PIPE if container.get("stdin") else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        except OSError as e:
            await runtime.append("stderr", f"fake kubelet: cannot start {container.get('name')}: {e}\n".encode())
            await self.ended(ns, name, container, runtime, 128, "StartError")
            return
        started = {"running": {"startedAt": now()}}
        self.store.update_status("pods", ns, name, {
            "phase": "Running", "startTime": now(), "podIP": runtime.address,
            "conditions": [{"type": t, "status": "True"} for t in
                           ("PodScheduled", "Initialized", "ContainersReady", "Ready")],
            "containerStatuses": [self.container_status(container, started, True)]})
        self.spawn(self.supervise(ns, name, container, runtime))

    def pull(self, container):
        """The container's waiting state once its image is "pulled": `ErrImagePull` when its
        first word is not in the command map, as for an image a node cannot pull."""
        first = ((container.get("command") or []) + (container.get("args") or []))[:1]
        if first and first[0] in self.commands:
            return {"reason": "ContainerCreating"}
        return {"reason": "ErrImagePull",
                "message": f"fake API: {container.get('image')} runs no {first} in this fake"}

    def free_address(self, container):
        """A loopback address of the pod's own, on which its container's ports are free."""
        ports = [p.get("containerPort") for p in container.get("ports") or []]
        while True:
            n = next(self.addresses)
            address = f"127.{self.octet}.{n // 250 % 250}.{n % 250 + 1}"
            if all(free(address, port) for port in ports):
                return address

    def container_status(self, container, state, ready):
        image = container.get("image", "")
        return {"name": container.get("name", ""), "image": image, "imageID": image_id(image),
                "ready": ready, "started": ready, "restartCount": 0, "state": state,
                "containerID": "fake://" + container.get("name", "")}

    def command(self, pod, container, runtime):
        """The process standing in for `container`: its argv, environment and directory, the
        container's paths rewritten to the pod's directories here, `--bind_ip_all` to the pod's
        own loopback address, and a StatefulSet pod's host name set (below)."""
        directory = runtime.dir
        paths = Paths()
        os.makedirs(os.path.join(directory, "tmp"), exist_ok=True)
        paths.add("/tmp", os.path.join(directory, "tmp"))
        volumes = {v["name"]: v for v in pod["spec"].get("volumes") or []}
        for mount in container.get("volumeMounts") or []:
            here = os.path.join(directory, "volumes", mount["name"])
            os.makedirs(here, exist_ok=True)
            paths.add(mount["mountPath"], here)
        for mount in container.get("volumeMounts") or []:
            volume = volumes.get(mount["name"], {})
            if "secret" in volume:
                self.write_secret(pod, volume["secret"]["secretName"],
                                  os.path.join(directory, "volumes", mount["name"]), paths)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": directory,
               "TMPDIR": os.path.join(directory, "tmp"), "HOSTNAME": pod["metadata"]["name"]}
        for e in container.get("env") or []:
            if "value" in e:
                env[e["name"]] = paths.rewrite(expand(e["value"], env))
            elif ((e.get("valueFrom") or {}).get("fieldRef")):
                env[e["name"]] = field_ref(pod, e["valueFrom"]["fieldRef"]["fieldPath"])
        words = [paths.rewrite(expand(w, env))
                 for w in (container.get("command") or []) + (container.get("args") or [])]
        words = [self.commands[words[0]]] + words[1:]
        if "--bind_ip_all" in words:
            i = words.index("--bind_ip_all")
            words[i:i + 1] = ["--bind_ip", runtime.address]
        return self.named(pod, words, runtime.address), env, directory

    def named(self, pod, argv, address):
        """The pod's process in a mount namespace of its own where `/etc/hosts` is the fake's
        (every server pod's `<pod>.<service>` and its address) and, for a StatefulSet's pod, in
        a UTS namespace whose host name is that name, as replica-set configurations give it.
        This fake has no DNS: that is how servers find themselves and each other, and clients
        the servers (root and `unshare` only; without them, the process as it is)."""
        if os.geteuid() != 0 or not shutil.which("unshare"):
            return argv
        spec = pod["spec"]
        hosts = 'mount --bind "$0" /etc/hosts && '
        if not spec.get("subdomain"):
            return ["unshare", "--mount", "sh", "-c", hosts + 'exec "$@"', self.hosts_file] + argv
        fqdn = f"{spec.get('hostname', pod['metadata']['name'])}.{spec['subdomain']}"
        self.hosts[fqdn] = address
        self.write_hosts()
        script = hosts + 'hostname "$1" && shift && exec "$@"'
        return ["unshare", "--uts", "--mount", "sh", "-c", script, self.hosts_file, fqdn] + argv

    def write_hosts(self):
        """The fake's hosts file, rewritten in place (its bind mounts keep showing it)."""
        lines = ["127.0.0.1 localhost", "::1 localhost"]
        lines += [f"{address} {name}" for name, address in sorted(self.hosts.items())]
        mode = "r+" if os.path.exists(self.hosts_file) else "w"
        with open(self.hosts_file, mode, encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
            f.truncate()

    def write_secret(self, pod, secret_name, here, paths):
        secret = self.store.get("secrets", pod["metadata"]["namespace"], secret_name)
        for key, value in (secret.get("data") or {}).items():
            text = base64.b64decode(value).decode("utf-8", "replace")
            with open(os.path.join(here, key), "w", encoding="utf-8") as f:
                f.write(paths.rewrite(text))

    async def supervise(self, ns, name, container, runtime):
        """The container's output into its log as it is written (a line without its newline
        too, as a container runtime logs a partial line), then its end."""
        async def pump(stream, reader):
            while chunk := await reader.read(65536):
                await runtime.append(stream, chunk)
        await asyncio.gather(pump("stdout", runtime.proc.stdout), pump("stderr", runtime.proc.stderr))
        code = await runtime.proc.wait()
        code = 128 - code if code < 0 else code
        await self.ended(ns, name, container, runtime, code, "Completed" if code == 0 else "Error")

    async def ended(self, ns, name, container, runtime, code, reason):
        state = {"terminated": {"exitCode": code, "reason": reason, "finishedAt": now()}}
        pod = self.store.update_status("pods", ns, name, {
            "phase": "Succeeded" if code == 0 else "Failed",
            "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [self.container_status(container, state, False)]})
        await runtime.finish()
        if pod is not None:
            self.job_progress(pod)

    def job_progress(self, pod):
        """The owning Job's counts and, once every pod ended, its condition."""
        refs = [r for r in pod["metadata"].get("ownerReferences") or [] if r["kind"] == "Job"]
        ns = pod["metadata"]["namespace"]
        job = refs and self.store.objects.get(("jobs", ns, refs[0]["name"]))
        if not job:
            return
        pods = [p for p in self.store.list("pods", ns)
                if any(r.get("uid") == job["metadata"]["uid"] for r in p["metadata"].get("ownerReferences") or [])]
        phases = [p.get("status", {}).get("phase") for p in pods]
        status = {"active": sum(p in ("Pending", "Running") for p in phases),
                  "succeeded": phases.count("Succeeded"), "failed": phases.count("Failed")}
        if status["active"] == 0:
            kind = "Failed" if status["failed"] else "Complete"
            status["conditions"] = [{"type": kind, "status": "True", "lastTransitionTime": now()}]
        self.store.update_status("jobs", ns, job["metadata"]["name"], status)

    def pod_deleted(self, pod, options):
        """A running pod: SIGTERM, SIGKILL after its grace period, then gone; else gone now."""
        meta = pod["metadata"]
        runtime = self.runtimes.get(meta["uid"])
        if runtime is None or runtime.done:
            self.forget(pod)
            return False
        if not meta.get("deletionTimestamp"):
            meta["deletionTimestamp"] = now()
            grace = options.get("gracePeriodSeconds")
            grace = pod["spec"].get("terminationGracePeriodSeconds", 30) if grace is None else grace
            self.spawn(self.stop(pod, runtime, grace))
        return True

    async def stop(self, pod, runtime, grace):
        runtime.signal(signal.SIGTERM if grace > 0 else signal.SIGKILL)
        try:
            await asyncio.wait_for(runtime.proc.wait(), timeout=max(grace, 0.01))
        except asyncio.TimeoutError:
            runtime.signal(signal.SIGKILL)
        async with runtime.changed:
            await runtime.changed.wait_for(lambda: runtime.done)
        self.forget(pod)

    def forget(self, pod):
        meta = pod["metadata"]
        key = ("pods", meta["namespace"], meta["name"])
        if self.store.objects.get(key) is pod:
            self.store.remove(*key)
        runtime = self.runtimes.pop(meta["uid"], None)
        if runtime is not None:
            shutil.rmtree(runtime.dir, ignore_errors=True)

    async def shutdown(self):
        """Every process killed and every pod directory removed: the fake leaves nothing."""
        for runtime in list(self.runtimes.values()):
            runtime.signal(signal.SIGKILL)
        for runtime in list(self.runtimes.values()):
            if runtime.proc:
                await runtime.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)

    def running(self):
        return sum(1 for r in self.runtimes.values() if r.proc and r.proc.returncode is None)
