//! The stand-in's Docker image, built from scratch (no registry): the `microshard` binary playing
//! `mongod` and `mongos`, and the shared libraries `ldd` lists for it.

use std::path::Path;

use bollard::Docker;
use bollard::query_parameters::BuildImageOptionsBuilder;
use futures::StreamExt;

use super::{DockerError, one_line};
use crate::backend::BackendError;

/// Builds `tag` from scratch with the `microshard` binary at `binary` playing `mongod` and
/// `mongos` (symlinks), plus the shared libraries `ldd` lists — no registry involved.
///
/// Rebuilding a tag leaves its previous image without a name; that image is removed once the new
/// one exists (unless a container still uses it), so repeated builds do not pile up on disk.
pub async fn build_standin_image(
    docker: &Docker,
    binary: &Path,
    tag: &str,
) -> Result<(), BackendError> {
    let previous = image_id(docker, tag).await;
    let context = standin_context(binary)?;
    let opts = BuildImageOptionsBuilder::default()
        .dockerfile("Dockerfile")
        .t(tag)
        .rm(true)
        .forcerm(true)
        .build();
    let mut stream = docker.build_image(opts, None, Some(bollard::body_full(context.into())));
    let mut last = Vec::new();
    while let Some(item) = stream.next().await {
        let info =
            item.map_err(|e| DockerError::Api(format!("building {tag} failed: {}", one_line(e))))?;
        if let Some(err) = info.error_detail.and_then(|d| d.message) {
            let failed = format!("building {tag} failed: {}", one_line(err));
            return Err(DockerError::Api(failed).into());
        }
        if let Some(s) = info.stream {
            last.push(s.trim().to_string());
        }
    }
    let Some(built) = image_id(docker, tag).await else {
        let failed = format!(
            "building {tag} finished without an image: {}",
            last.join(" | ")
        );
        return Err(DockerError::Api(failed).into());
    };
    if let Some(old) = previous.filter(|old| *old != built) {
        // Not forced: an image a container still runs stays.
        let _ = docker
            .remove_image(
                &old,
                None::<bollard::query_parameters::RemoveImageOptions>,
                None,
            )
            .await;
    }
    Ok(())
}

/// The id of the image `tag` names, if any.
async fn image_id(docker: &Docker, tag: &str) -> Option<String> {
    docker.inspect_image(tag).await.ok().and_then(|i| i.id)
}

/// The tar build context of the stand-in image (Dockerfile + root file system).
pub(crate) fn standin_context(binary: &Path) -> Result<Vec<u8>, BackendError> {
    let bin = std::fs::read(binary)
        .map_err(|e| BackendError::io(format!("cannot read {}", binary.display()), e))?;
    let libs = shared_libraries(binary)?;
    let mut builder = tar::Builder::new(Vec::new());
    let b = &mut builder;
    let (file, dir) = (tar::EntryType::Regular, tar::EntryType::Directory);
    let dockerfile = "FROM scratch\nCOPY rootfs/ /\nENV PATH=/usr/local/bin\nWORKDIR /data/db\n";
    let nsswitch = "hosts: files dns\n";
    let entries: [(&str, _, &[u8], u32); 7] = [
        ("Dockerfile", file, dockerfile.as_bytes(), 0o644),
        ("rootfs/data/db", dir, &[], 0o755),
        ("rootfs/data/configdb", dir, &[], 0o755),
        ("rootfs/tmp", dir, &[], 0o1777),
        ("rootfs/etc", dir, &[], 0o755),
        ("rootfs/etc/nsswitch.conf", file, nsswitch.as_bytes(), 0o644),
        ("rootfs/usr/local/bin/microshard", file, &bin, 0o755),
    ];
    for (path, kind, data, mode) in entries {
        append(b, path, kind, data, mode)?;
    }
    for name in ["mongod", "mongos"] {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Symlink);
        h.set_size(0);
        h.set_mode(0o777);
        b.append_link(&mut h, format!("rootfs/usr/local/bin/{name}"), "microshard")
            .map_err(|e| BackendError::io("building the image context", e))?;
    }
    for lib in libs {
        let data = std::fs::read(&lib)
            .map_err(|e| BackendError::io(format!("cannot read {}", lib.display()), e))?;
        append(b, &format!("rootfs{}", lib.display()), file, &data, 0o755)?;
    }
    builder
        .into_inner()
        .map_err(|e| BackendError::io("building the image context", e))
}

/// One file or directory (`data` empty) of the build context.
fn append(
    b: &mut tar::Builder<Vec<u8>>,
    path: &str,
    kind: tar::EntryType,
    data: &[u8],
    mode: u32,
) -> Result<(), BackendError> {
    let mut h = tar::Header::new_gnu();
    h.set_size(data.len() as u64);
    h.set_mode(mode);
    h.set_entry_type(kind);
    b.append_data(&mut h, path, data)
        .map_err(|e| BackendError::io(format!("building the image context ({path})"), e))
}

/// The absolute paths `ldd` lists for `binary` (libc, libm, libgcc_s, the loader, ...).
pub(crate) fn shared_libraries(binary: &Path) -> Result<Vec<std::path::PathBuf>, BackendError> {
    let out = std::process::Command::new("ldd")
        .arg(binary)
        .output()
        .map_err(|e| BackendError::io(format!("cannot run ldd on {}", binary.display()), e))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        // A statically linked binary needs nothing.
        if text.contains("not a dynamic executable")
            || String::from_utf8_lossy(&out.stderr).contains("not a dynamic executable")
        {
            return Ok(Vec::new());
        }
        return Err(BackendError::Program(format!(
            "ldd {} failed: {}",
            binary.display(),
            text.trim()
        )));
    }
    Ok(parse_ldd(&text))
}

fn parse_ldd(text: &str) -> Vec<std::path::PathBuf> {
    text.lines()
        .filter_map(|line| {
            line.split_once("=>")
                .map_or(line, |(_, rest)| rest)
                .split_whitespace()
                .next()
        })
        .filter(|p| p.starts_with('/'))
        .map(std::path::PathBuf::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_output_parsing() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x1)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x2)\n\t/lib64/ld-linux-x86-64.so.2 (0x3)\n";
        let libs = parse_ldd(text);
        assert_eq!(
            libs,
            vec![
                std::path::PathBuf::from("/lib/x86_64-linux-gnu/libgcc_s.so.1"),
                std::path::PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                std::path::PathBuf::from("/lib64/ld-linux-x86-64.so.2"),
            ]
        );
    }

    #[test]
    fn context_holds_the_binary_and_links() {
        let exe = std::env::current_exe().unwrap();
        let ctx = standin_context(&exe).unwrap();
        let mut archive = tar::Archive::new(&ctx[..]);
        let names: Vec<String> = archive
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect();
        assert!(names.contains(&"Dockerfile".to_string()));
        assert!(names.contains(&"rootfs/usr/local/bin/mongod".to_string()));
        assert!(names.iter().any(|n| n.contains("libc.so")), "{names:?}");
    }
}
