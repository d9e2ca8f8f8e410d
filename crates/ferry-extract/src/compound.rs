//! A check of a compound file's sector chains (the container of `.xls` workbooks) before
//! calamine reads it.
//!
//! A compound file stores each stream as a chain of sectors: its allocation table (the FAT,
//! and the mini FAT for small streams) gives each sector's successor. calamine follows a chain
//! until its end mark or, for the directory, without any length bound, so a table whose chain
//! loops back on itself makes it append the same sectors forever (found by fuzzing: a few KB
//! that grow without bound). Here both tables are read and any loop is refused as a malformed
//! file, before calamine sees it. Everything else (a bad signature, a sector beyond the end)
//! is left to calamine, which reports it.

use std::io::{Read, Seek, SeekFrom};

use crate::error::ExtractError;

const SIGNATURE: [u8; 8] = [0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1];
/// Ids at and above this are marks (end of chain, free, FAT or DIFAT sector), not sectors.
const FIRST_MARK: u32 = 0xFFFF_FFFA;
const HEADER_FAT_IDS: usize = 109;

/// Refuses a compound file whose FAT or mini FAT has a chain that loops, or whose FAT lists
/// more sectors than the file holds. `len` is the file's
/// length; the reader is left at its start.
pub(crate) fn check_chains<R: Read + Seek>(
    reader: &mut R,
    len: u64,
    what: &'static str,
) -> Result<(), ExtractError> {
    let result = read_tables(reader, len);
    reader
        .seek(SeekFrom::Start(0))
        .map_err(|e| ExtractError::io(&e))?;
    let malformed = match result {
        Ok(Tables::Read { fat, mini_fat }) if has_loop(&fat) || has_loop(&mini_fat) => {
            "a chain of its sectors loops back on itself"
        }
        Ok(Tables::Malformed(why)) => why,
        // Tables that read fine, or not at all, are calamine's to judge.
        Ok(Tables::Read { .. } | Tables::Unknown) | Err(_) => return Ok(()),
    };
    Err(ExtractError::invalid(what, malformed))
}

/// What was found of a compound file's allocation tables.
enum Tables {
    /// Not a compound file whose tables can be read here: calamine decides.
    Unknown,
    /// Broken in a way that would make calamine's reading unbounded.
    Malformed(&'static str),
    Read {
        fat: Vec<u32>,
        mini_fat: Vec<u32>,
    },
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// The FAT and the mini FAT, read as calamine reads them.
fn read_tables<R: Read + Seek>(reader: &mut R, len: u64) -> std::io::Result<Tables> {
    let mut header = [0u8; 512];
    reader.seek(SeekFrom::Start(0))?;
    if reader.read_exact(&mut header).is_err() || header[..8] != SIGNATURE {
        return Ok(Tables::Unknown);
    }
    let shift = u16::from_le_bytes([header[30], header[31]]);
    if shift != 9 && shift != 12 {
        return Ok(Tables::Unknown);
    }
    let sector_size = 1usize << shift;
    // As calamine reads them: sector `id` starts at `(id + 1) * sector_size`; an id past
    // `len / sector_size` is an error (no chain goes on through it), and the last sector may be
    // short, its table then holding fewer entries.
    let max_id = len / sector_size as u64;
    let mut sector = vec![0u8; sector_size];
    let mut entries_of = |reader: &mut R, id: u32| -> std::io::Result<Option<Vec<u32>>> {
        if u64::from(id) > max_id {
            return Ok(None);
        }
        let offset = (u64::from(id) + 1) * sector_size as u64;
        let available = len.saturating_sub(offset).min(sector_size as u64) as usize;
        reader.seek(SeekFrom::Start(offset))?;
        reader.read_exact(&mut sector[..available])?;
        Ok(Some(
            (0..available / 4).map(|i| u32_at(&sector, 4 * i)).collect(),
        ))
    };
    let sectors_in_file = max_id as usize + 1;

    // The FAT's own sectors: 109 ids in the header, then the DIFAT chain (each of its sectors
    // holds ids and, last, the next DIFAT sector), walked at most once per sector.
    let mut fat_ids: Vec<u32> = (0..HEADER_FAT_IDS)
        .map(|i| u32_at(&header, 76 + 4 * i))
        .collect();
    let mut difat = u32_at(&header, 68);
    let mut steps = 0;
    while difat < FIRST_MARK {
        steps += 1;
        let Some(mut ids) = entries_of(reader, difat)?.filter(|_| steps <= sectors_in_file) else {
            return Ok(Tables::Unknown);
        };
        let Some(next) = ids.pop() else {
            return Ok(Tables::Unknown);
        };
        fat_ids.extend(ids);
        difat = next;
    }
    fat_ids.retain(|id| *id < FIRST_MARK);
    // Each FAT sector is a sector of the file, listed once: a table listing more than the file
    // holds would make the FAT (and everything read through it) larger than the file.
    if fat_ids.len() > sectors_in_file {
        return Ok(Tables::Malformed(
            "its allocation table lists more sectors than the file holds",
        ));
    }
    let mut fat = Vec::new();
    for id in fat_ids {
        let Some(entries) = entries_of(reader, id)? else {
            return Ok(Tables::Unknown);
        };
        fat.extend(entries);
    }
    // The mini FAT is itself a stream in the FAT; it is read (sector by sector, up to its
    // declared length) only when the FAT has no loop.
    if has_loop(&fat) {
        return Ok(Tables::Read {
            fat,
            mini_fat: Vec::new(),
        });
    }
    let mut mini_fat = Vec::new();
    let mut id = u32_at(&header, 60);
    let mini_sectors = u32_at(&header, 64) as usize;
    for _ in 0..mini_sectors.min(sectors_in_file) {
        if id >= FIRST_MARK || id as usize >= fat.len() {
            break;
        }
        let Some(entries) = entries_of(reader, id)? else {
            break;
        };
        mini_fat.extend(entries);
        id = fat[id as usize];
    }
    Ok(Tables::Read { fat, mini_fat })
}

/// Whether following successors from any entry of `table` comes back to an entry already on
/// the same walk. Each entry is walked once: linear in the table's size.
fn has_loop(table: &[u32]) -> bool {
    const UNSEEN: u8 = 0;
    const ON_WALK: u8 = 1;
    const DONE: u8 = 2;
    let mut state = vec![UNSEEN; table.len()];
    let mut walk = Vec::new();
    for start in 0..table.len() {
        if state[start] != UNSEEN {
            continue;
        }
        let mut at = start;
        let looped = loop {
            match state[at] {
                ON_WALK => break true,
                DONE => break false,
                _ => {}
            }
            state[at] = ON_WALK;
            walk.push(at);
            let next = table[at];
            if next >= FIRST_MARK || next as usize >= table.len() {
                break false;
            }
            at = next as usize;
        };
        if looped {
            return true;
        }
        for entry in walk.drain(..) {
            state[entry] = DONE;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    const END: u32 = 0xFFFF_FFFE;
    const FREE: u32 = 0xFFFF_FFFF;

    #[test]
    fn chains_that_end_are_fine_and_loops_are_found() {
        assert!(!has_loop(&[1, 2, END, FREE, 5, END]));
        assert!(!has_loop(&[]));
        assert!(has_loop(&[1, 2, 0]));
        assert!(has_loop(&[END, 1]));
        assert!(has_loop(&[1, 2, 3, 4, 2]));
        // Two chains joining is not a loop.
        assert!(!has_loop(&[2, 2, END]));
        // An id beyond the table ends the walk (calamine reports it).
        assert!(!has_loop(&[7, END]));
    }
}
