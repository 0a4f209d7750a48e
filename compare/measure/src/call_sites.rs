//! The frame a frame-pointer walk skips, read back from the binary.
//!
//! A stack walked by frame pointers from inside a system call starts at the
//! C library's wrapper, which keeps no frame of its own: the frame pointer
//! it leaves is its caller's, so the walk's next frame is its caller's
//! caller, and the function that made the call (`Unparker::unpark`, a
//! fault's `injected_wake`) is not seen. That caller's caller called it,
//! though, and where the call is a direct one (`call rel32`, the five
//! bytes before the return address) its target names it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};

use super::callgrind::frame_name;

/// The binaries read so far, by path (none where one could not be read).
#[derive(Default)]
pub struct CallSites {
    binaries: HashMap<PathBuf, Option<Binary>>,
}

/// What of a binary finds a call's target: its code, and its functions.
struct Binary {
    /// Each executable section's offset in the file, address and bytes.
    code: Vec<(u64, u64, Vec<u8>)>,
    /// Each function's start, size and name, by start.
    functions: Vec<(u64, u64, String)>,
}

/// A direct call's opcode, and its length with its 32-bit displacement.
const CALL: u8 = 0xe8;
const CALL_LEN: u64 = 5;

impl CallSites {
    /// The function that the call before a return address in `binary`
    /// called, named as perf names frames; none where that call is not a
    /// direct one, or the binary cannot be read. The return address is
    /// where perf's script puts it: at `offset` in the file.
    pub fn callee(&mut self, binary: &Path, offset: u64) -> Option<String> {
        let read = self
            .binaries
            .entry(binary.to_path_buf())
            .or_insert_with(|| Binary::read(binary));
        read.as_ref()?.callee(offset)
    }
}

impl Binary {
    fn read(path: &Path) -> Option<Self> {
        let data = std::fs::read(path).ok()?;
        let file = object::File::parse(&*data).ok()?;
        let code = file
            .sections()
            .filter(|s| s.kind() == object::SectionKind::Text)
            .filter_map(|s| {
                let (offset, _) = s.file_range()?;
                Some((offset, s.address(), s.data().ok()?.to_vec()))
            })
            .collect();
        let mut functions: Vec<(u64, u64, String)> = file
            .symbols()
            .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0)
            .filter_map(|s| {
                let name = format!("{:#}", rustc_demangle::demangle(s.name().ok()?));
                Some((s.address(), s.size(), frame_name(&name)))
            })
            .collect();
        functions.sort_by_key(|f| f.0);
        Some(Self { code, functions })
    }

    fn callee(&self, offset: u64) -> Option<String> {
        let (start, address, bytes) = self
            .code
            .iter()
            .find(|(start, _, bytes)| (*start..=*start + bytes.len() as u64).contains(&offset))?;
        let at = (offset - start).checked_sub(CALL_LEN)? as usize;
        let instruction = bytes.get(at..at + CALL_LEN as usize)?;
        if instruction[0] != CALL {
            return None;
        }
        let displacement = i32::from_le_bytes(instruction[1..].try_into().ok()?);
        let returns_to = address + (offset - start);
        let target = returns_to.checked_add_signed(displacement.into())?;
        let i = self
            .functions
            .partition_point(|f| f.0 <= target)
            .checked_sub(1)?;
        let (start, size, name) = &self.functions[i];
        (target < start + size.max(&1)).then(|| name.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_direct_call_s_target_is_named_from_the_five_bytes_before_its_return() {
        // Code at 0x100 in the file, loaded at 0x1100.
        let binary = Binary {
            code: vec![(0x100, 0x1100, {
                let mut bytes = vec![0x90; 0x40];
                // At 0x1110: call 0x1130 (displacement 0x1130 - 0x1115).
                bytes[0x10..0x15].copy_from_slice(&[CALL, 0x1b, 0, 0, 0]);
                bytes
            })],
            functions: vec![
                (0x1100, 0x30, "caller".into()),
                (0x1130, 0x10, "pingpong::fault::injected_wake".into()),
            ],
        };
        assert_eq!(
            binary.callee(0x115).as_deref(),
            Some("pingpong::fault::injected_wake")
        );
        // Not a direct call before it, or an offset outside the code.
        assert_eq!(binary.callee(0x116), None);
        assert_eq!(binary.callee(0x3000), None);
        // This test's own binary: a call to a function of its own is named.
        let this = std::env::current_exe().unwrap();
        assert!(Binary::read(&this).is_some_and(|b| !b.functions.is_empty()));
    }
}
