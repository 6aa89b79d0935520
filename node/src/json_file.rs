//! Small JSON files a member keeps in its data directory (`member.json`,
//! `peers.json`): read if present, and written so that a crash leaves the
//! old file or the new one, never half of either (a temporary file, synced,
//! renamed over the old one, then the directory synced so the rename
//! itself survives a power cut).

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;

/// The value saved at `path`, or `None` when there is no such file.
pub fn load<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).map(Some).map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Saves `value` at `path` inside `dir`, creating `dir` if needed.
pub fn save<T: Serialize>(dir: &Path, path: &Path, value: &T) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(&tmp)?;
        std::io::Write::write_all(&mut file, text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    };
    write().map_err(|e| format!("{}: {e}", path.display()))
}
