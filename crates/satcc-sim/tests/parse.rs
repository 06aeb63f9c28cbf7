//! `scenario::parse_table`: errors name the field by its full path, inside
//! kind-tagged tables too, and one parse's path never leaks into another.

use satcc_sim::scenario::{parse_table, FieldError, FlowSpec, LinkSpec, Scenario};

fn table(text: &str) -> toml::Table {
    text.parse().expect("valid TOML")
}

fn flow_error(text: &str) -> FieldError {
    parse_table::<FlowSpec>(table(text)).expect_err("refused")
}

#[test]
fn nested_paths_are_joined() {
    let e = flow_error("protocol = \"tfrc\"\napp = { kind = \"files\", size = \"x\" }");
    assert_eq!(e.field, "app.size");
    assert!(e.message.starts_with("invalid size 'x'"), "{e}");
    // An error at the top of a kind-tagged table names the table.
    let e = flow_error("protocol = \"tfrc\"\napp = { kind = \"files\" }");
    assert_eq!(e, FieldError::new("app", "missing field `size`"));
    // A kind-tagged table in a link.
    let e = parse_table::<LinkSpec>(table(
        "rate = \"1Mbps\"\ndelay = \"1ms\"\nqueue = { kind = \"red\", limit = \"x\" }",
    ))
    .expect_err("refused");
    assert_eq!(e.field, "queue.limit");
    // Two levels: that queue in a link of a graph topology.
    let e = parse_table::<Scenario>(table(
        "duration = \"1s\"\n[topology]\nkind = \"graph\"\nnodes = [\"a\", \"b\"]\n\
         links = [{ from = \"a\", to = \"b\", rate = \"1Mbps\", delay = \"1ms\", \
         queue = { kind = \"red\", limit = \"x\" } }]",
    ))
    .expect_err("refused");
    assert_eq!(e.field, "topology.links[0].queue.limit");
    // The whole table at fault: no field.
    assert_eq!(flow_error("mss = 3").field, "");
}

#[test]
fn a_path_recorded_elsewhere_does_not_leak() {
    // Typed outside parse_table, the nested error's path stays behind...
    let v = toml::Value::Table(table(
        "protocol = \"tfrc\"\napp = { kind = \"files\", size = \"x\" }",
    ));
    assert!(v.try_into::<FlowSpec>().is_err());
    // ...and is not taken for the path of the next, unrelated error.
    assert_eq!(flow_error("protocol = \"nope\"").field, "protocol");
    let e = flow_error("protocol = \"tfrc\"\nmss = \"x\"");
    assert_eq!(e.field, "mss");
}
