//! The server `calibrate` measures the client against: a stand-in `mongod` with no service time,
//! in a process of its own (this binary as `standin mongod`), so the client shares the machine's
//! cores with it as it does with a cell's server, and not its own runtime's threads.

use std::time::Duration;

/// A stand-in `mongod` child process on a free local port.
pub(crate) struct CeilingServer {
    child: tokio::process::Child,
    /// Its connection string.
    pub uri: String,
    _dbpath: tempfile::TempDir,
}

/// Starts the stand-in and waits (at most 10 s) until it accepts connections.
pub(crate) async fn start() -> anyhow::Result<CeilingServer> {
    let exe = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("calibrate: cannot find this microshard binary: {e}"))?;
    // A port the kernel just handed out and took back: free for the child to bind.
    let port = std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| anyhow::anyhow!("calibrate: no free local port for the stand-in: {e}"))?;
    let dbpath = tempfile::tempdir()?;
    let child = tokio::process::Command::new(exe)
        .args(["standin", "mongod", "--bind_ip", "127.0.0.1", "--port"])
        .arg(port.to_string())
        .arg("--dbpath")
        .arg(dbpath.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| anyhow::anyhow!("calibrate: cannot start the stand-in: {e}"))?;
    let mut server = CeilingServer {
        child,
        uri: format!("mongodb://127.0.0.1:{port}/?directConnection=true"),
        _dbpath: dbpath,
    };
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Ok(server);
        }
        if let Ok(Some(status)) = server.child.try_wait() {
            anyhow::bail!("calibrate: the stand-in exited at start ({status})");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    server.stop().await;
    anyhow::bail!("calibrate: the stand-in did not accept connections within 10 s")
}

impl CeilingServer {
    /// Stops the stand-in and waits for it.
    pub(crate) async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}
