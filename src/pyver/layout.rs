//! Laying out a rewritten instruction stream as `co_code`, for the normalisations between
//! versions (`py312::normalise`: 3.12 → 3.11; `py313::normalise`: 3.13 → 3.12): the target
//! version's cache sizes and `EXTENDED_ARG`, jump arguments from the targets' new offsets, the
//! line table of the result. The rewrites say what each instruction becomes; this module only
//! places them. Knows no opcode meanings but what the target version's [`Isa`] gives.
use std::collections::BTreeMap;

/// What the layout needs of the version it writes.
pub struct Isa {
    pub cache_entries: fn(u8) -> usize,
    pub is_backward_jump: fn(u8) -> bool,
    pub extended_arg: u8,
}

/// One instruction of a rewritten stream.
pub trait Item: Copy {
    fn line(&self) -> u32;
    /// For a jump, its target as an offset of the stream's source code object.
    fn target(&self) -> Option<u32>;
    /// The opcode; for a jump, the one for its direction (`forward`: the target is after it).
    fn opcode(&self, forward: bool) -> u8;
    /// The argument (ignored for jumps: computed here).
    fn arg(&self) -> u32;
}

/// `co_code`, the source offset → new offset map, and `co_lines` for `stream` (each source
/// instruction's offset with what it became, possibly nothing); `code_len` is the source's
/// length (the offset after its last instruction). Jump arguments depend on the layout and the
/// layout on their `EXTENDED_ARG`s, so it is repeated until no argument needs more prefixes
/// (sizes only grow). A jump whose target lies the wrong way for its opcode is an `Err`.
#[allow(clippy::type_complexity)]
pub fn encode<T: Item>(
    stream: &[(u32, Vec<T>)],
    code_len: u32,
    isa: &Isa,
) -> Result<(Vec<u8>, BTreeMap<u32, u32>, Vec<(u32, u32, u32)>), String> {
    let flat: Vec<T> = stream.iter().flat_map(|(_, outs)| outs.iter().copied()).collect();
    let mut ext = vec![0u32; flat.len()];
    // The direction each jump was last laid out with (its opcode's cache size may depend on it).
    let mut forward = vec![true; flat.len()];
    loop {
        // Offsets of each output (its EXTENDED_ARG prefixes first) and of each source instruction.
        let mut starts = Vec::with_capacity(flat.len());
        let mut pos = 0u32;
        for (k, o) in flat.iter().enumerate() {
            starts.push(pos);
            pos += 2 * (1 + ext[k]) + 2 * (isa.cache_entries)(o.opcode(forward[k])) as u32;
        }
        let end = pos;
        let mut offsets = BTreeMap::new();
        {
            let mut k = 0;
            for (o, outs) in stream {
                offsets.insert(*o, starts.get(k).copied().unwrap_or(end));
                k += outs.len();
            }
        }
        offsets.insert(code_len, end);
        let new_off = |o: u32| -> u32 { *offsets.range(o..).next().map(|(_, v)| v).unwrap_or(&end) };
        let mut code = Vec::with_capacity(end as usize);
        let mut lines: Vec<(u32, u32, u32)> = Vec::new();
        let mut grew = false;
        for (k, o) in flat.iter().enumerate() {
            let mut op = o.opcode(forward[k]);
            let mut arg = o.arg();
            let op_at = starts[k] + 2 * ext[k];
            if let Some(target) = o.target() {
                let target = new_off(target);
                let next = op_at + 2 + 2 * (isa.cache_entries)(op) as u32;
                let fwd = target >= next;
                if fwd != forward[k] {
                    forward[k] = fwd;
                    op = o.opcode(fwd);
                    if (isa.cache_entries)(op) != (isa.cache_entries)(o.opcode(!fwd)) {
                        grew = true;
                    }
                }
                let next = op_at + 2 + 2 * (isa.cache_entries)(op) as u32;
                arg = if (isa.is_backward_jump)(op) {
                    if target >= next {
                        return Err(format!("unexpected bytecode shape (a backward jump forward) at line {}", o.line()));
                    }
                    (next - target) / 2
                } else {
                    if target < next {
                        return Err(format!("unexpected bytecode shape (a forward jump backward) at line {}", o.line()));
                    }
                    (target - next) / 2
                };
            }
            let need = (0..4).find(|&n| arg >> (8 * (n + 1)) == 0).unwrap_or(3);
            if need > ext[k] {
                ext[k] = need;
                grew = true;
            }
            for n in (1..=ext[k]).rev() {
                code.extend([isa.extended_arg, (arg >> (8 * n)) as u8]);
            }
            code.extend([op, arg as u8]);
            code.extend(std::iter::repeat(0).take(2 * (isa.cache_entries)(op)));
            let (s, e) = (starts[k], code.len() as u32);
            match lines.last_mut() {
                Some(l) if l.2 == o.line() && l.1 == s => l.1 = e,
                _ => lines.push((s, e, o.line())),
            }
        }
        if !grew {
            return Ok((code, offsets, lines));
        }
    }
}
