"""The fake API's objects, in memory: create, get, list by label selector, merge patch and
delete, with the API's error statuses. What deleting an object also deletes (a Job's pods, a
namespace's contents) and what a pod runs belong to the controllers (`kubelet.py`), which
register hooks here. A test fake: nothing here says how a real API server behaves beyond the
requests microshard makes."""

import base64
import datetime
import itertools
import uuid

# plural -> (apiVersion, kind, namespaced)
RESOURCES = {
    "namespaces": ("v1", "Namespace", False),
    "secrets": ("v1", "Secret", True),
    "pods": ("v1", "Pod", True),
    "services": ("v1", "Service", True),
    "jobs": ("batch/v1", "Job", True),
    "statefulsets": ("apps/v1", "StatefulSet", True),
    "leases": ("coordination.k8s.io/v1", "Lease", True),
}


class ApiError(Exception):
    """An error the API answers with a `Status` object."""

    def __init__(self, code, reason, message):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message

    def status(self):
        return {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": self.message, "reason": self.reason, "code": self.code,
        }


def now(micro=False):
    """The time as the API writes it (`MicroTime` with microseconds)."""
    t = datetime.datetime.now(datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def parse_selector(text):
    """`k=v`, `k==v`, `k!=v`, `k`, `!k`, comma-separated, as a predicate over a label map."""
    terms = []
    for term in filter(None, (t.strip() for t in (text or "").split(","))):
        if "!=" in term:
            k, v = term.split("!=", 1)
            terms.append(lambda l, k=k.strip(), v=v.strip(): l.get(k) != v)
        elif "=" in term:
            k, v = term.replace("==", "=").split("=", 1)
            terms.append(lambda l, k=k.strip(), v=v.strip(): l.get(k) == v)
        elif term.startswith("!"):
            terms.append(lambda l, k=term[1:].strip(): k not in l)
        elif " in " in term or " notin " in term:
            raise ApiError(400, "BadRequest", f"fake API: set-based selector {term!r} not supported")
        else:
            terms.append(lambda l, k=term: k in l)
    return lambda labels: all(t(labels or {}) for t in terms)


def merge_patch(target, patch):
    """RFC 7386: `null` deletes a key, objects merge, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


class Store:
    """Every object, keyed by (plural, namespace, name); `namespace` is "" when cluster-scoped."""

    def __init__(self):
        self.objects = {}
        self.versions = itertools.count(1)
        # plural -> callables(obj); `on_delete` ones return True when they take the deletion over.
        self.on_create, self.on_delete = {}, {}

    def _version(self, obj):
        obj["metadata"]["resourceVersion"] = str(next(self.versions))

    def create(self, plural, ns, obj):
        api_version, kind, _ = RESOURCES[plural]
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        name = meta.get("name")
        if not name:
            raise ApiError(422, "Invalid", f"{kind}: metadata.name: Required value")
        if ns and ("namespaces", "", ns) not in self.objects:
            raise ApiError(404, "NotFound", f'namespaces "{ns}" not found')
        if ns and self.objects[("namespaces", "", ns)]["metadata"].get("deletionTimestamp"):
            raise ApiError(403, "Forbidden", f'{plural} "{name}" is forbidden: namespace {ns} is being terminated')
        if (plural, ns, name) in self.objects:
            raise ApiError(409, "AlreadyExists", f'{plural} "{name}" already exists')
        obj["apiVersion"], obj["kind"] = api_version, kind
        meta.update(uid=str(uuid.uuid4()), creationTimestamp=now())
        if ns:
            meta["namespace"] = ns
        if plural == "secrets" and "stringData" in obj:
            data = obj.setdefault("data", {})
            for k, v in obj.pop("stringData").items():
                data[k] = base64.b64encode(v.encode()).decode()
        if plural == "namespaces":
            obj["status"] = {"phase": "Active"}
        self._version(obj)
        self.objects[(plural, ns, name)] = obj
        for hook in self.on_create.get(plural, []):
            hook(obj)
        return obj

    def get(self, plural, ns, name):
        obj = self.objects.get((plural, ns, name))
        if obj is None:
            raise ApiError(404, "NotFound", f'{plural} "{name}" not found')
        return obj

    def list(self, plural, ns=None, selector=None):
        """Objects of `plural` (in `ns`, or everywhere when `None`) whose labels match."""
        match = parse_selector(selector)
        return [
            o for (p, n, _), o in sorted(self.objects.items(), key=lambda kv: kv[0])
            if p == plural and (ns is None or n == ns) and match(o["metadata"].get("labels"))
        ]

    def patch(self, plural, ns, name, patch):
        obj = self.get(plural, ns, name)
        merged = merge_patch(obj, patch)
        # Identity is the API's, never the patch's.
        for k in ("name", "namespace", "uid", "creationTimestamp"):
            if k in obj["metadata"]:
                merged["metadata"][k] = obj["metadata"][k]
        self._version(merged)
        self.objects[(plural, ns, name)] = merged
        return merged

    def update_status(self, plural, ns, name, status):
        """What a controller or the kubelet writes: the status merged, if the object is there."""
        obj = self.objects.get((plural, ns, name))
        if obj is not None:
            obj["status"] = merge_patch(obj.get("status", {}), status)
            self._version(obj)
        return obj

    def delete(self, plural, ns, name, options):
        """Deletes (or starts deleting) an object; `options` is the body's DeleteOptions."""
        obj = self.get(plural, ns, name)
        want = ((options or {}).get("preconditions") or {}).get("uid")
        if want and want != obj["metadata"]["uid"]:
            raise ApiError(409, "Conflict", (
                f"Precondition failed: UID in precondition: {want}, "
                f"UID in object meta: {obj['metadata']['uid']}"))
        for hook in self.on_delete.get(plural, []):
            if hook(obj, options or {}):
                return obj
        self.remove(plural, ns, name)
        return obj

    def remove(self, plural, ns, name):
        """Gone from the store, with no hook run (the controllers' last step)."""
        self.objects.pop((plural, ns, name), None)

    def in_namespace(self, ns):
        return [(p, n, name) for (p, n, name) in self.objects if n == ns]
