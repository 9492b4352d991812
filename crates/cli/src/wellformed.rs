//! A tag-nesting check for the HTML report, shared by the unit tests and the
//! end-to-end test (`#[path]`-included there): no dependencies.

/// Checks that the tags of `html` nest: every opened element is closed in
/// order, except void elements and self-closed (`/>`) SVG elements. Returns the
/// first problem. Used by tests; comments, doctype and text are skipped.
pub fn check_well_formed(html: &str) -> Result<(), String> {
    const VOID: [&str; 4] = ["meta", "br", "hr", "img"];
    let mut stack: Vec<String> = Vec::new();
    let mut rest = html;
    let mut pos = 0;
    while let Some(i) = rest.find('<') {
        if rest[..i].contains('>') {
            return Err(format!("stray '>' in text before byte {}", pos + i));
        }
        let after = &rest[i + 1..];
        let Some(j) = after.find('>') else { return Err(format!("unterminated tag at byte {}", pos + i)) };
        let tag = &after[..j];
        let at = pos + i;
        pos += i + 1 + j + 1;
        rest = &after[j + 1..];
        if tag.starts_with('!') {
            continue;
        }
        if tag.contains('<') {
            return Err(format!("'<' inside a tag at byte {at}"));
        }
        if let Some(name) = tag.strip_prefix('/') {
            match stack.pop() {
                Some(open) if open == name.trim() => {}
                Some(open) => return Err(format!("</{}> closes <{open}> at byte {at}", name.trim())),
                None => return Err(format!("</{}> without an open element at byte {at}", name.trim())),
            }
            continue;
        }
        let name: String = tag.chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
        if name.is_empty() {
            return Err(format!("bad tag <{tag}> at byte {at}"));
        }
        if tag.ends_with('/') || VOID.contains(&name.as_str()) {
            continue;
        }
        if name == "style" {
            // Raw text up to the closing tag; must not contain '<'.
            let close = format!("</{name}>");
            let Some(k) = rest.find(&close) else { return Err(format!("<{name}> not closed")) };
            if rest[..k].contains('<') {
                return Err(format!("'<' inside <{name}>"));
            }
            pos += k + close.len();
            rest = &rest[k + close.len()..];
            continue;
        }
        stack.push(name);
    }
    if rest.contains('>') {
        return Err("stray '>' in text".into());
    }
    match stack.last() {
        Some(open) => Err(format!("<{open}> never closed")),
        None => Ok(()),
    }
}
