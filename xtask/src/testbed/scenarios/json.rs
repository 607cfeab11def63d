//! `scenarios.json`: the scenarios as the dom0 runner (`run.py`) reads them.

use super::model::{Scenario, Topology};

/// `scenarios.json` for the dom0 runner.
pub fn to_json(list: &[&Scenario]) -> String {
    let mut o = String::from("[\n");
    for (i, s) in list.iter().enumerate() {
        let disks: Vec<String> = s
            .disks
            .iter()
            .map(|d| {
                format!(
                    "{{\"var\": {}, \"size_mb\": {}, \"source\": {}, \"loop\": {}}}",
                    js(d.var),
                    d.size_mb,
                    d.source.map_or("null".to_string(), |n| js(n.file_name())),
                    d.loop_dev
                )
            })
            .collect();
        let steps: Vec<String> = s
            .steps
            .iter()
            .map(|st| {
                let capture: Vec<String> = st
                    .capture
                    .iter()
                    .map(|(v, rx)| format!("[{}, {}]", js(v), js(rx)))
                    .collect();
                format!(
                    "{{\"kind\": {}, \"send\": {}, \"expect\": {}, \"capture\": [{}], \
                     \"timeout\": {}, \"ends\": {}, \"netns\": {}}}",
                    js(st.kind.as_str()),
                    js(st.send),
                    js_list(st.expect),
                    capture.join(", "),
                    st.timeout_s,
                    st.ends,
                    js(st.netns)
                )
            })
            .collect();
        let end = s.end.as_str();
        o.push_str(&format!(
            " {{\"name\": {}, \"config\": {}, \"console\": {}, \"prompt\": {}, \"eol\": {},\n  \
             \"boot_timeout\": {}, \"boot_expect\": {}, \"disks\": [{}],\n  \"steps\": [{}],\n  \
             \"end\": {}, \"end_timeout\": {}, \"budget\": {}, \"topology\": {}}}{}\n",
            js(s.name),
            js(s.config),
            js(s.console.as_str()),
            js(s.prompt),
            js(s.eol),
            s.boot_timeout_s,
            js_list(s.boot_expect),
            disks.join(", "),
            steps.join(", "),
            js(end),
            s.end_timeout_s,
            s.budget_s,
            js(s.topology.map_or("", Topology::as_str)),
            if i + 1 < list.len() { "," } else { "" }
        ));
    }
    o.push_str("]\n");
    o
}

fn js(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn js_list(v: &[&str]) -> String {
    let items: Vec<String> = v.iter().map(|s| js(s)).collect();
    format!("[{}]", items.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testbed::scenarios::find;

    #[test]
    fn json_escapes() {
        assert_eq!(js("a\"b\\c\nd\u{1}"), r#""a\"b\\c\nd\u0001""#);
        let j = to_json(&[find("hvm-kernel").unwrap()]);
        assert!(j.starts_with("[\n {\"name\": \"hvm-kernel\""));
        assert!(j.contains(r#""expect": ["^Xenlet "]"#));
        let j = to_json(&[find("blk-phy").unwrap()]);
        assert!(j.contains(r#""kind": "dom0""#));
        assert!(j.contains(r#""capture": [["SUM", "^([0-9a-f]{64})  /dev/xvdb$"]]"#));
        assert!(to_json(&[find("xen-pvh").unwrap()]).contains(r#""end": "xl-reboot""#));
    }
}
