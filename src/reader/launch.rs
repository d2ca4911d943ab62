//! The PDF readers this command knows, found on PATH, and opening a file in one at a page.
//! zathura is driven live ([`super::zathura`]); the others open the annotated copy, whose
//! highlights they draw themselves.

use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Reader {
    Zathura,
    Okular,
    Evince,
}

impl Reader {
    pub fn program(self) -> &'static str {
        match self {
            Reader::Zathura => "zathura",
            Reader::Okular => "okular",
            Reader::Evince => "evince",
        }
    }

    /// Debian's packages that install it.
    fn packages(self) -> &'static str {
        match self {
            Reader::Zathura => "zathura zathura-pdf-poppler",
            Reader::Okular => "okular",
            Reader::Evince => "evince",
        }
    }

    /// An error that says how to install it, unless it is on PATH. Looked up before a start:
    /// where the launcher cannot report a failed exec (posix_spawn under qemu-user), a missing
    /// program would read as one that started, or ended at once.
    pub fn require(self) -> anyhow::Result<()> {
        if on_path(self.program()) {
            return Ok(());
        }
        anyhow::bail!("{} is not installed (Debian: apt install {})", self.program(), self.packages())
    }

    /// The command that opens `file` at `page` (from 1).
    pub fn open_at(self, file: &Path, page: u32) -> std::process::Command {
        let mut c = std::process::Command::new(self.program());
        match self {
            Reader::Zathura => c.arg("--page").arg(page.to_string()),
            Reader::Okular => c.arg("--page").arg(page.to_string()),
            Reader::Evince => c.arg("--page-index").arg(page.to_string()),
        };
        c.arg(file);
        c
    }
}

/// Whether `program` is an executable file on PATH.
pub fn on_path(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|d| std::fs::metadata(d.join(program)).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
    })
}

/// The installed readers, in the order `auto` tries them.
pub fn installed() -> Vec<Reader> {
    [Reader::Zathura, Reader::Okular, Reader::Evince].into_iter().filter(|r| on_path(r.program())).collect()
}

/// Starts `reader` on `file` at `page`, detached from this command.
pub fn spawn_at(reader: Reader, file: &Path, page: u32) -> anyhow::Result<u32> {
    reader.require()?;
    let child = reader
        .open_at(file, page)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| anyhow::anyhow!("cannot start {}: {e}", reader.program()))?;
    Ok(child.id())
}
