//! A "newc" cpio archive (the format the kernel unpacks as an initramfs;
//! Documentation/driver-api/early-userspace/buffer-format.rst), written in
//! memory: no cpio or gzip binary needed, and the kernel takes it uncompressed.

use std::fmt::Write as _;

#[derive(Default)]
pub struct Cpio {
    buf: Vec<u8>,
    ino: u32,
}

impl Cpio {
    pub fn new() -> Self {
        Self::default()
    }

    fn entry(&mut self, name: &str, mode: u32, data: &[u8]) {
        self.ino += 1;
        let name = name.trim_start_matches('/');
        let mut h = String::with_capacity(110);
        h.push_str("070701");
        // ino mode uid gid nlink mtime filesize devmajor devminor rdevmajor rdevminor namesize check
        for v in [self.ino, mode, 0, 0, 1, 0, data.len() as u32, 0, 0, 0, 0, name.len() as u32 + 1, 0] {
            let _ = write!(h, "{v:08x}");
        }
        self.buf.extend_from_slice(h.as_bytes());
        self.buf.extend_from_slice(name.as_bytes());
        self.buf.push(0);
        self.pad();
        self.buf.extend_from_slice(data);
        self.pad();
    }

    fn pad(&mut self) {
        while !self.buf.len().is_multiple_of(4) {
            self.buf.push(0);
        }
    }

    pub fn dir(&mut self, path: &str) {
        self.entry(path, 0o040755, &[]);
    }

    /// A regular file; `exec` makes it 0755.
    pub fn file(&mut self, path: &str, data: &[u8], exec: bool) {
        self.entry(path, if exec { 0o100755 } else { 0o100644 }, data);
    }

    /// Every parent directory of `path` that `made` does not hold yet, top down.
    pub fn parents(&mut self, path: &str, made: &mut Vec<String>) {
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        for i in 1..parts.len() {
            let d = parts[..i].join("/");
            if !made.contains(&d) {
                self.dir(&d);
                made.push(d);
            }
        }
    }

    pub fn finish(mut self) -> Vec<u8> {
        self.entry("TRAILER!!!", 0, &[]);
        while !self.buf.len().is_multiple_of(512) {
            self.buf.push(0);
        }
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn newc_layout() {
        let mut c = Cpio::new();
        c.file("/init", b"#!/bin/sh\n", true);
        let b = c.finish();
        assert_eq!(&b[..6], b"070701");
        // mode field (second) of the first header: 0755 regular file.
        assert_eq!(&b[14..22], b"000081ed");
        // name "init\0" right after the 110-byte header, data 4-aligned after it.
        assert_eq!(&b[110..115], b"init\0");
        assert_eq!(&b[116..126], b"#!/bin/sh\n");
        assert!(String::from_utf8_lossy(&b).contains("TRAILER!!!"));
        assert_eq!(b.len() % 512, 0);
    }
}
