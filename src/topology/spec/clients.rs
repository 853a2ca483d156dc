//! A topology's `clients` entries: client containers on Docker engines
//! (`{ docker = ..., count = N }`), or client pods run as one Indexed Job in a Kubernetes context
//! (`{ kubernetes = "CONTEXT", count = N, node_selector = {...} }`), and the `client_image` they
//! run. Every refusal names the file, line and key before anything starts.

use std::collections::BTreeMap;

use toml::Spanned;

use super::{
    ClientHostSpec, Ctx, DEFAULT_CLIENT_IMAGE, MAX_CLIENTS_PER_ENGINE, RawClients, RawSpec,
};
use crate::topology::TopologyError;

/// Client pods in a Kubernetes cluster: the phase's clients run as one Indexed Job there, each
/// pod's completion index picking the key slice `--clients` would give that client
/// (`docs/kubernetes.md`, "Client pods").
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClientPodsSpec {
    /// The kubeconfig context the Job is created in (`in-cluster` when microshard runs in a pod).
    pub context: String,
    /// How many client pods (the Job's `completions` and `parallelism`).
    pub count: u32,
    /// Labels a node must carry to run a client pod.
    pub node_selector: BTreeMap<String, String>,
    /// Whether client pods may share a node with the run's server pods (every table says so
    /// when they may); by default a required anti-affinity keeps them apart.
    pub allow_colocated: bool,
}

/// The parsed `clients` list: Docker engines, or client pods (never both in one topology, so
/// one merge covers one kind of client).
pub(super) struct Clients {
    pub docker: Vec<ClientHostSpec>,
    pub pods: Option<ClientPodsSpec>,
}

/// `clients = [...]`: each entry names a Docker engine or a Kubernetes context.
pub(super) fn clients(
    raw: &[Spanned<RawClients>],
    ctx: &Ctx<'_>,
) -> Result<Clients, TopologyError> {
    let mut out = Clients {
        docker: Vec::new(),
        pods: None,
    };
    for (i, entry) in raw.iter().enumerate() {
        let c = entry.get_ref();
        let key = format!("clients[{i}]");
        let count = ctx.within(
            &c.count,
            &format!("{key}.count"),
            1..=i64::from(MAX_CLIENTS_PER_ENGINE),
        )? as u32;
        match (&c.docker, &c.kubernetes) {
            (Some(d), None) => {
                refuse_pod_keys(c, &key, ctx)?;
                out.docker.push(engine(d, count, &out.docker, &key, ctx)?);
            }
            (None, Some(k)) if out.pods.is_some() => {
                return Err(ctx.err(
                    &k.span(),
                    &format!("{key}.kubernetes"),
                    "a second Kubernetes entry: client pods are one Indexed Job; give one entry with the total count",
                ));
            }
            (None, Some(k)) => out.pods = Some(pods(c, k, count, &key, ctx)?),
            (Some(_), Some(k)) => {
                return Err(ctx.err(
                    &k.span(),
                    &key,
                    "names both docker and kubernetes; give one per entry",
                ));
            }
            (None, None) => {
                return Err(ctx.err(
                    &entry.span(),
                    &key,
                    "names neither docker = \"ENDPOINT\" nor kubernetes = \"CONTEXT\"",
                ));
            }
        }
    }
    if let (Some(first), Some(_)) = (raw.first(), &out.pods)
        && !out.docker.is_empty()
    {
        return Err(ctx.err(
            &first.span(),
            "clients",
            "mixes Docker engines and Kubernetes pods; one run's clients are of one kind",
        ));
    }
    Ok(out)
}

/// One Docker engine entry.
fn engine(
    d: &Spanned<String>,
    count: u32,
    seen: &[ClientHostSpec],
    key: &str,
    ctx: &Ctx<'_>,
) -> Result<ClientHostSpec, TopologyError> {
    let endpoint = d.get_ref().trim().to_string();
    check_client_engine(&endpoint).map_err(|m| ctx.err(&d.span(), &format!("{key}.docker"), m))?;
    if seen.iter().any(|h| h.docker == endpoint) {
        return Err(ctx.err(
            &d.span(),
            &format!("{key}.docker"),
            format!("engine {endpoint:?} is listed twice; give it one entry with the total count"),
        ));
    }
    Ok(ClientHostSpec {
        docker: endpoint,
        count,
    })
}

/// `node_selector` and `allow_colocated` place pods: on a Docker entry they would be ignored.
fn refuse_pod_keys(c: &RawClients, key: &str, ctx: &Ctx<'_>) -> Result<(), TopologyError> {
    let span = match (&c.node_selector, &c.allow_colocated) {
        (Some(s), _) => (s.span(), "node_selector"),
        (None, Some(a)) => (a.span(), "allow_colocated"),
        (None, None) => return Ok(()),
    };
    Err(ctx.err(
        &span.0,
        &format!("{key}.{}", span.1),
        "applies only to a kubernetes = \"CONTEXT\" entry",
    ))
}

/// One Kubernetes entry: its context, node selector and placement choice.
fn pods(
    c: &RawClients,
    k: &Spanned<String>,
    count: u32,
    key: &str,
    ctx: &Ctx<'_>,
) -> Result<ClientPodsSpec, TopologyError> {
    let context = k.get_ref().trim().to_string();
    if context.is_empty() || context.contains(char::is_whitespace) {
        return Err(ctx.err(
            &k.span(),
            &format!("{key}.kubernetes"),
            format!("{context:?} is not a kubeconfig context name (or \"in-cluster\")"),
        ));
    }
    let node_selector = c.node_selector.as_ref().map_or(Ok(BTreeMap::new()), |s| {
        check_selector(s.get_ref())
            .map(|()| s.get_ref().clone())
            .map_err(|m| ctx.err(&s.span(), &format!("{key}.node_selector"), m))
    })?;
    check_built(k, key, ctx)?;
    Ok(ClientPodsSpec {
        context,
        count,
        node_selector,
        allow_colocated: c.allow_colocated.as_ref().is_some_and(|a| *a.get_ref()),
    })
}

/// Client pods are driven through the Kubernetes API, which only a build with the `kubernetes`
/// feature links.
#[cfg(not(feature = "kubernetes"))]
fn check_built(k: &Spanned<String>, key: &str, ctx: &Ctx<'_>) -> Result<(), TopologyError> {
    Err(ctx.err(
        &k.span(),
        &format!("{key}.kubernetes"),
        "client pods need a microshard built with the kubernetes feature (cargo build --release --features kubernetes)",
    ))
}

#[cfg(feature = "kubernetes")]
fn check_built(_: &Spanned<String>, _: &str, _: &Ctx<'_>) -> Result<(), TopologyError> {
    Ok(())
}

/// Label keys (`[prefix/]name`) and values as Kubernetes accepts them: the API server would
/// refuse the Job later, after the cluster is up.
fn check_selector(selector: &BTreeMap<String, String>) -> Result<(), String> {
    let name_ok = |s: &str, max: usize| {
        s.len() <= max
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            && s.chars().next().is_none_or(|c| c.is_ascii_alphanumeric())
            && s.chars().last().is_none_or(|c| c.is_ascii_alphanumeric())
    };
    for (k, v) in selector {
        let (prefix, name) = k.rsplit_once('/').unwrap_or(("", k));
        let prefix_ok = prefix.len() <= 253
            && prefix
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-.".contains(c));
        if name.is_empty() || !name_ok(name, 63) || !prefix_ok {
            return Err(format!("{k:?} is not a Kubernetes label key"));
        }
        if !name_ok(v, 63) {
            return Err(format!("{k} = {v:?}: not a Kubernetes label value"));
        }
    }
    Ok(())
}

/// `client_image`: only with clients elsewhere; pods need one the nodes can pull, pinned
/// (`:latest` would make two runs' clients differ silently).
pub(super) fn client_image(
    raw: &RawSpec,
    docker: &[ClientHostSpec],
    pods: Option<&ClientPodsSpec>,
    ctx: &Ctx<'_>,
) -> Result<String, TopologyError> {
    let image = match &raw.client_image {
        Some(i) if i.get_ref().trim().is_empty() => {
            return Err(ctx.err(&i.span(), "client_image", "must not be empty"));
        }
        Some(i) if docker.is_empty() && pods.is_none() => {
            return Err(ctx.err(
                &i.span(),
                "client_image",
                "applies only with clients = [{ docker = ..., count = N }] or [{ kubernetes = ..., count = N }]",
            ));
        }
        Some(i) => i.get_ref().trim().to_string(),
        None => DEFAULT_CLIENT_IMAGE.to_string(),
    };
    if pods.is_some() && !pinned(&image) {
        let span = raw.client_image.as_ref().map_or(0..0, |i| i.span());
        return Err(ctx.err(
            &span,
            "client_image",
            format!(
                "{image:?}: client pods need an image the nodes pull by a fixed tag or digest (REPO:VERSION or REPO@sha256:...), not :latest"
            ),
        ));
    }
    Ok(image)
}

/// Whether an image reference names a fixed tag or a digest.
fn pinned(image: &str) -> bool {
    if image.contains("@sha256:") {
        return true;
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    last.split_once(':')
        .is_some_and(|(_, tag)| !tag.is_empty() && tag != "latest")
}

/// Refuses a client engine endpoint this build cannot reach; the message says what is accepted.
fn check_client_engine(endpoint: &str) -> Result<(), String> {
    let Some((scheme, rest)) = endpoint.split_once("://") else {
        return Err(format!(
            "{endpoint:?} is not a Docker endpoint URL (unix:///var/run/docker.sock, tcp://host:2375)"
        ));
    };
    match scheme {
        "unix" | "tcp" | "http" if !rest.is_empty() => Ok(()),
        "unix" | "tcp" | "http" => Err(format!("{endpoint:?} names no socket or host")),
        "https" | "npipe" => Err(format!(
            "{scheme}:// endpoints are not supported by this build (no TLS, not Windows): reach the engine over a unix:// socket or a tcp:// / http:// URL, e.g. an SSH tunnel to its socket"
        )),
        other => Err(format!(
            "scheme {other}:// is not a Docker endpoint: use unix://, tcp:// or http://"
        )),
    }
}
