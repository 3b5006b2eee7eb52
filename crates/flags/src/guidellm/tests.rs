use super::*;

fn parse(args: &[&str]) -> Result<GuidellmArgs, FlagError> {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    DIALECT.parse::<GuidellmArgs>(&args).map(|(a, _)| a)
}

fn run(args: &[&str]) -> Result<(LoadSpec, Info), FlagError> {
    let a = parse(args)?;
    let backend = backend(&a)?;
    let (samples, turns, data) = data::read(&a.data, seed(&a)?, None)?;
    let inputs = Inputs {
        target: Target::parse_at("http://127.0.0.1:9/v1/chat/completions", None).unwrap(),
        model: backend.model.clone().unwrap_or_else(|| "m".into()),
        backend,
        tokenizer: None,
        samples,
        turns,
        data,
    };
    translate(&a, inputs)
}

#[test]
fn the_run_form_makes_guidellms_requests_profile_and_outputs() {
    let (mut spec, info) = run(&[
        "--backend",
        "kind=openai_http,target=http://127.0.0.1:9,model=llama,max_tokens=6,extras={\"temperature\":0.5}",
        "--profile",
        "kind=concurrent,streams=[2,8]",
        "--constraint",
        "kind=max_requests,count=40",
        "--constraint",
        "kind=max_errors,count=3",
        "--data",
        "kind=synthetic_text,prompt_tokens=12,output_tokens=10,samples=100",
        "--output",
        "kind=console",
        "--output",
        "kind=json,path=/tmp/guidellm-test.json",
        "-l",
        "team=a",
    ])
    .unwrap();
    assert_eq!(
        info.profile,
        Profile::Fixed(vec![
            Strategy::Concurrent { streams: 2 },
            Strategy::Concurrent { streams: 8 }
        ])
    );
    assert_eq!(info.constraints.max_requests, Some(40));
    assert_eq!(info.constraints.max_errors, Some(3));
    assert_eq!(
        info.outputs,
        [
            Output::Console,
            Output::Json("/tmp/guidellm-test.json".into())
        ]
    );
    assert_eq!(info.labels["team"], "a");
    assert_eq!(spec.load.requests, Some(40));
    assert_eq!(spec.load.variety.len(), 100);
    let text = String::from_utf8_lossy(&spec.load.variety[0].bytes).into_owned();
    let body: serde_json::Value =
        serde_json::from_str(text.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert_eq!(body["model"], "llama");
    assert_eq!(
        body["max_completion_tokens"], 6,
        "max_tokens caps the asked length"
    );
    assert_eq!(body["temperature"], 0.5);
    assert_eq!(body["stream"], true);
    shape(&mut spec, &Strategy::Concurrent { streams: 8 }, 1);
    assert_eq!(spec.load.connections, 8);
    assert!(matches!(spec.load.shape, Shape::Closed));
    shape(
        &mut spec,
        &Strategy::Poisson {
            rate: 3.0,
            max_concurrency: 16,
        },
        1,
    );
    assert!(matches!(spec.load.shape, Shape::Rate { rate, .. } if rate == 3.0));
    assert_eq!(spec.load.connections, 16);
}

#[test]
fn the_benchmark_form_is_read_as_guidellm_read_it() {
    let (spec, info) = run(&[
        "--target",
        "http://127.0.0.1:9",
        "--rate-type",
        "constant",
        "--rate",
        "1,2.5",
        "--max-seconds",
        "3",
        "--data",
        "prompt_tokens=8,output_tokens=4",
        "--output-path",
        "/tmp",
    ])
    .unwrap();
    assert_eq!(
        info.profile,
        Profile::Fixed(vec![
            Strategy::Constant {
                rate: 1.0,
                max_concurrency: 512
            },
            Strategy::Constant {
                rate: 2.5,
                max_concurrency: 512
            }
        ])
    );
    assert_eq!(spec.load.duration, Some(Duration::from_secs(3)));
    assert_eq!(spec.load.requests, None);
    assert_eq!(
        info.outputs,
        [
            Output::Json("/tmp/benchmarks.json".into()),
            Output::Csv("/tmp/benchmarks.csv".into())
        ]
    );
    let (_, info) = run(&[
        "--target",
        "http://x:1",
        "--data",
        "prompt_tokens=8",
        "--rate-type",
        "sweep",
        "--rate",
        "5",
    ])
    .unwrap();
    assert_eq!(
        info.profile,
        Profile::Sweep {
            size: 5,
            poisson: false,
            max_concurrency: 512
        }
    );
    let (_, info) = run(&[
        "--target",
        "http://x:1",
        "--data",
        "prompt_tokens=8",
        "--profile",
        "kind=concurrent",
        "--override",
        "profile.streams",
        "1,4",
    ])
    .unwrap();
    assert_eq!(
        info.profile,
        Profile::Fixed(vec![
            Strategy::Concurrent { streams: 1 },
            Strategy::Concurrent { streams: 4 }
        ])
    );
}

#[test]
fn bad_arguments_are_refused_naming_flag_and_field() {
    let base = [
        "--backend",
        "kind=openai_http,target=http://x:1",
        "--data",
        "prompt_tokens=4",
    ];
    for (extra, want) in [
        (
            vec!["--profile", "kind=fast"],
            "--profile kind=fast: synchronous, concurrent",
        ),
        (
            vec!["--profile", "kind=concurrent"],
            "streams=N (or a list) is needed",
        ),
        (
            vec!["--profile", "kind=constant,rate=2,speed=3"],
            "speed is not a field taken here",
        ),
        (
            vec!["--profile", "kind=knee,initial_streams=[1,2]"],
            "5 to 64 distinct",
        ),
        (
            vec!["--profile", r#"{"kind":"knee","initial_streams":[1,2,3]}"#],
            "5 to 64 distinct",
        ),
        (
            vec!["--profile", "kind=goodput"],
            "give them, e.g. --metrics",
        ),
        (
            vec!["--profile", "kind=synchronous,warmup=0.1"],
            "warmup = 0.1",
        ),
        (
            vec!["--constraint", "kind=over_saturation"],
            "--constraint kind=over_saturation",
        ),
        (
            vec!["--constraint", "kind=max_requests,count=0"],
            "count = 0",
        ),
        (vec!["--output", "kind=html"], "--output kind=html"),
        (
            vec!["--metrics", "kind=generative,slo.ttft=3"],
            "slo.ttft: ttft_ms",
        ),
    ] {
        let mut all: Vec<&str> = base.to_vec();
        all.extend(extra.iter().copied());
        let e = run(&all).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains(want), "{extra:?}: {e}");
    }
    let e = run(&[
        "--backend",
        "kind=openai_http,target=http://x:1,request_format=/v1/embeddings",
        "--data",
        "prompt_tokens=4",
    ])
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("request_format=/v1/embeddings"), "{e}");
    let e = run(&["--backend", "kind=vllm_python", "--data", "prompt_tokens=4"])
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("--backend kind=vllm_python"), "{e}");
    let e = parse(&["--scenario", "x.json"]).err().unwrap().to_string();
    assert!(
        e.contains("--scenario") && e.contains("the flags themselves"),
        "{e}"
    );
}

#[test]
fn goodput_takes_guidellms_service_levels() {
    let (spec, info) = run(&[
        "--backend",
        "kind=openai_http,target=http://x:1",
        "--data",
        "prompt_tokens=4,output_tokens=4",
        "--profile",
        "kind=goodput,initial_streams=2,max_streams=64",
        "--metrics",
        "kind=generative,slo.ttft_ms=200,slo.e2el_ms=900",
    ])
    .unwrap();
    assert!(matches!(
        info.profile,
        Profile::Goodput {
            initial: 2,
            max: 64,
            ..
        }
    ));
    let slo = spec.load.streams.slo.unwrap();
    assert_eq!((slo.ttft_us, slo.e2el_us), (Some(200_000), Some(900_000)));
}
