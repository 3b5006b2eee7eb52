use super::*;

fn words(s: &str) -> Vec<String> {
    s.split(' ').map(String::from).collect()
}

/// A scratch directory, removed at the end.
struct Dir(PathBuf);

impl Dir {
    fn new() -> Dir {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let d = std::env::temp_dir().join(format!(
            "stampede-inputs-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    fn file(&self, name: &str, text: &str) -> String {
        let p = self.0.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn inputs_are_found_by_their_flags_and_the_command_rewritten() {
    let d = Dir::new();
    let t = d.file("t.txt", "GET http://h/a\n");
    let b = d.file("b.json", "{}");
    let cmd = words(&format!(
        "load -c 2 --targets {t} --body-file={b} --json-lines x http://h/"
    ));
    let found = find(&cmd, OVER_SSH).unwrap();
    let names: Vec<&str> = found.files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["1-t.txt", "2-b.json"]);
    assert_eq!(
        found.command_at("/tmp/in").join(" "),
        "load -c 2 --targets /tmp/in/1-t.txt --body-file=/tmp/in/2-b.json --json-lines x http://h/"
    );
    assert_eq!(found.bytes(), 17);
    assert_eq!(
        found.files[1].sha256,
        "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
    );
    assert!(found
        .sums()
        .starts_with(&format!("{}  1-t.txt\n", found.files[0].sha256)));
    // The digest names the inputs: the same files give the same, another gives another.
    assert_eq!(found.digest(), find(&cmd, OVER_SSH).unwrap().digest());
    d.file("b.json", "{ }");
    assert_ne!(found.digest(), find(&cmd, OVER_SSH).unwrap().digest());
    // A command with no inputs ships nothing and is left as it is.
    let plain = find(&words("wrk -c 2 http://h/"), OVER_SSH).unwrap();
    assert!(plain.files.is_empty());
    assert_eq!(plain.command_at("/x"), words("wrk -c 2 http://h/"));
}

#[test]
fn directories_names_and_comma_lists_travel_as_each_flag_takes_them() {
    let d = Dir::new();
    d.file("tok/tokenizer.json", "{}");
    d.file("tok/sub/vocab.txt", "a b");
    let tok = d.0.join("tok").to_string_lossy().into_owned();
    let data = d.file("data.jsonl", "{\"prompt\": \"p\"}\n");
    let cmd = words(&format!(
        "vllm bench serve --model m --tokenizer {tok} --dataset-name hf --dataset-path {data}"
    ));
    let found = find(&cmd, OVER_SSH).unwrap();
    let names: Vec<&str> = found.files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "1-tok/tokenizer.json",
            "1-tok/sub/vocab.txt",
            "2-data.jsonl"
        ]
    );
    assert!(found
        .command_at("/in")
        .join(" ")
        .ends_with("--tokenizer /in/1-tok --dataset-name hf --dataset-path /in/2-data.jsonl"));
    // A tokenizer named by its model stays a name.
    let named = find(&words("vllm bench serve --tokenizer gpt2-xyz"), OVER_SSH).unwrap();
    assert!(named.files.is_empty());
    // httperf's session log is the file after the last comma.
    let log = d.file("s.log", "/a\n");
    let h = find(
        &words(&format!("httperf --wsesslog 10,0,{log} --rate 5")),
        OVER_SSH,
    )
    .unwrap();
    assert_eq!(
        h.command_at("/in").join(" "),
        "httperf --wsesslog 10,0,/in/1-s.log --rate 5"
    );
    // ghz's import paths: each directory.
    d.file("p1/a.proto", "syntax = \"proto3\";");
    d.file("p2/b.proto", "syntax = \"proto3\";");
    let (p1, p2) = (d.0.join("p1"), d.0.join("p2"));
    let g = find(
        &words(&format!(
            "ghz -i {},{} --call a.B/C x:1",
            p1.display(),
            p2.display()
        )),
        OVER_SSH,
    )
    .unwrap();
    assert_eq!(
        g.command_at("/in").join(" "),
        "ghz -i /in/1-p1,/in/2-p2 --call a.B/C x:1"
    );
}

#[test]
fn inputs_that_cannot_travel_are_refused_by_flag_before_anything_starts() {
    let d = Dir::new();
    let e = find(&words("load --targets - http://h/"), OVER_SSH).unwrap_err();
    assert!(
        e.usage
            && e.message
                .contains("--targets -: standard input does not travel"),
        "{e}"
    );
    let e = find(&words("oha -D /no/such/file http://h/"), OVER_SSH).unwrap_err();
    assert!(
        e.message.starts_with("-D /no/such/file: ") && e.message.contains("ships it"),
        "{e}"
    );
    let dir = d.0.to_string_lossy().into_owned();
    let e = find(&words(&format!("hey -D {dir} http://h/")), OVER_SSH).unwrap_err();
    assert!(
        e.message.contains("a directory; this flag takes a file"),
        "{e}"
    );
    let big = d.file("big.txt", &"x".repeat(2000));
    let small = Bound {
        bytes: 1000,
        way: "in a test",
    };
    let e = find(&words(&format!("load --targets {big} http://h/")), small).unwrap_err();
    assert!(
        e.message.contains(
            "2000 bytes would make the shipped inputs 2000 bytes; at most 1000 travel in a test"
        ),
        "{e}"
    );
    let e = find(&words("load --targets"), OVER_SSH).unwrap_err();
    assert!(e.message.contains("no value given"), "{e}");
}

#[test]
fn the_archive_unpacks_with_tar_and_checks_with_sha256sum() {
    let d = Dir::new();
    d.file("tok/tokenizer.json", "{\"model\": 1}");
    let t = d.file("t.txt", "GET http://h/\n");
    let tok = d.0.join("tok").to_string_lossy().into_owned();
    let found = find(
        &words(&format!("load --targets {t} --tokenizer {tok} http://h/")),
        OVER_SSH,
    )
    .unwrap();
    let archive = tar(&found.files, &found.sums());
    assert_eq!(archive.len() % 512, 0);
    let out = d.0.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let run = |program: &str, args: &[&str], input: &[u8]| {
        std::process::Command::new(program)
            .args(args)
            .current_dir(&out)
            .stdin(std::process::Stdio::piped())
            .output_with_input(input)
            .unwrap()
    };
    let tar_out = run("tar", &["-xf", "-"], &archive);
    assert!(tar_out.status.success(), "{tar_out:?}");
    assert_eq!(
        std::fs::read_to_string(out.join("2-tok/tokenizer.json")).unwrap(),
        "{\"model\": 1}"
    );
    let sums = run("sha256sum", &["-c", "--quiet", "SHA256SUMS"], b"");
    assert!(sums.status.success(), "{sums:?}");
    // A damaged copy is caught.
    std::fs::write(out.join("1-t.txt"), "GET http://h/x\n").unwrap();
    let sums = run("sha256sum", &["-c", "--quiet", "SHA256SUMS"], b"");
    assert!(!sums.status.success());
}

/// A command run with `input` on its standard input, its output collected.
trait WithInput {
    fn output_with_input(&mut self, input: &[u8]) -> Option<std::process::Output>;
}

impl WithInput for std::process::Command {
    fn output_with_input(&mut self, input: &[u8]) -> Option<std::process::Output> {
        use std::io::Write;
        let mut child = self
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .ok()?;
        child.stdin.take()?.write_all(input).ok()?;
        child.wait_with_output().ok()
    }
}
