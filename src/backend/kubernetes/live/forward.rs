//! Admin traffic from this machine to the pods: per member pod, a listener on 127.0.0.1 whose
//! every connection is carried to the pod's port through the API's port-forward (what `kubectl
//! port-forward` does), so the shared assembly dials each member directly wherever the cluster
//! is. The listeners live while this process does, until the run's teardown stops them.

use std::io;
use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::error::KubeError;

/// A byte stream to a member.
pub(crate) trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// One stream to a member, being opened.
pub(crate) type Opening = BoxFuture<'static, io::Result<Box<dyn Stream>>>;

/// Opens one new stream to a member: a port-forward to its pod, or (in tests) a socket.
pub(crate) type Dial = Arc<dyn Fn() -> Opening + Send + Sync>;

/// Streams to port `port` of pod `pod` in `ns`, each through a port-forward of its own.
pub(crate) fn to_pod(client: &kube::Client, ns: &str, pod: &str, port: u16) -> Dial {
    let api = Api::<Pod>::namespaced(client.clone(), ns);
    let pod = pod.to_string();
    Arc::new(move || -> Opening {
        let (api, pod) = (api.clone(), pod.clone());
        Box::pin(async move {
            let mut forwarder = api
                .portforward(&pod, &[port])
                .await
                .map_err(io::Error::other)?;
            let stream = forwarder
                .take_stream(port)
                .ok_or_else(|| io::Error::other(format!("port-forward to {pod}: no stream")))?;
            // The forwarder's task goes on without its handle, until the stream is dropped.
            Ok(Box::new(stream) as Box<dyn Stream>)
        })
    })
}

/// A listener on 127.0.0.1 (a port the system picks) carrying each connection to a stream of
/// `dial`, until `stop`; returns its `host:port`.
pub(crate) async fn listen(
    pod: &str,
    dial: Dial,
    stop: CancellationToken,
) -> Result<String, KubeError> {
    let failed = |error| KubeError::Forward {
        pod: pod.to_string(),
        error,
    };
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.map_err(failed)?;
    let address = listener.local_addr().map_err(failed)?.to_string();
    tokio::spawn(serve(listener, dial, stop));
    Ok(address)
}

/// Accepts connections until `stop`, each copied both ways to a new stream of `dial`. A stream
/// that cannot be opened closes its connection: the driver sees a network error and retries,
/// as it does while a member is starting.
async fn serve(listener: TcpListener, dial: Dial, stop: CancellationToken) {
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => return,
            a = listener.accept() => a,
        };
        let Ok((mut local, _)) = accepted else {
            continue;
        };
        let (dial, stop) = (dial.clone(), stop.clone());
        tokio::spawn(async move {
            let Ok(mut remote) = dial().await else {
                return;
            };
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = tokio::io::copy_bidirectional(&mut local, &mut remote) => {}
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// An echo server standing in for a pod, dialled as the port-forward would be.
    async fn echo() -> Dial {
        let server = TcpListener::bind(("127.0.0.1", 0))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let at = server.local_addr().unwrap_or_else(|e| panic!("{e}"));
        tokio::spawn(async move {
            while let Ok((mut s, _)) = server.accept().await {
                tokio::spawn(async move {
                    let (mut r, mut w) = s.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        });
        Arc::new(move || -> Opening {
            Box::pin(async move {
                let s = tokio::net::TcpStream::connect(at).await?;
                Ok(Box::new(s) as Box<dyn Stream>)
            })
        })
    }

    #[tokio::test]
    async fn every_connection_is_carried_to_a_stream_of_its_own_until_stopped() {
        let stop = CancellationToken::new();
        let address = listen("p-0", echo().await, stop.clone())
            .await
            .unwrap_or_default();
        assert!(address.starts_with("127.0.0.1:"), "{address}");
        for word in [b"ping".as_slice(), b"hello".as_slice()] {
            let mut c = tokio::net::TcpStream::connect(&address)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            c.write_all(word).await.unwrap_or_else(|e| panic!("{e}"));
            let mut back = vec![0; word.len()];
            c.read_exact(&mut back)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(back, word);
        }
        stop.cancel();
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let after = tokio::net::TcpStream::connect(&address).await;
        assert!(after.is_err(), "the listener is closed once stopped");
    }

    #[tokio::test]
    async fn a_stream_that_cannot_be_opened_closes_the_connection() {
        let dial: Dial =
            Arc::new(|| -> Opening { Box::pin(async { Err(io::Error::other("refused")) }) });
        let stop = CancellationToken::new();
        let address = listen("p-0", dial, stop.clone()).await.unwrap_or_default();
        let mut c = tokio::net::TcpStream::connect(&address)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let mut buf = [0u8; 1];
        let n = tokio::time::timeout(std::time::Duration::from_secs(5), c.read(&mut buf)).await;
        assert!(
            matches!(n, Ok(Ok(0)) | Ok(Err(_))),
            "closed, not left hanging: {n:?}"
        );
        stop.cancel();
    }
}
