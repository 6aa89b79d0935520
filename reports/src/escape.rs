//! Escaping for text that goes into HTML, SVG (XML) and Markdown: scenario
//! names, invariant explanations and trace lines are data, never markup.

/// Escapes text for an element body or a double-quoted attribute.
pub fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters are not allowed in XML 1.0 at all.
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// JSON embedded in a `<script>` block: `</` would end the block early, so
/// it is written as the equivalent JSON escape `<\/`.
pub fn script_json(json: &str) -> String {
    json.replace("</", "<\\/")
}

/// Text for a Markdown table cell: pipes and line breaks would break the row.
pub fn md_cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// A string safe to use in an `id` attribute (letters, digits, `-`, `_`).
pub fn id_part(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_data_stays_text() {
        assert_eq!(xml("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
        assert_eq!(script_json(r#"["</script>"]"#), r#"["<\/script>"]"#);
        assert_eq!(md_cell("a|b\nc"), "a\\|b c");
        assert_eq!(id_part("orders/eu 1"), "orders_eu_1");
    }
}
