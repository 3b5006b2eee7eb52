"""Writes the Parquet files the dataset tests read, with pyarrow: the layouts of
Hugging Face datasets saved as Parquet, each compressed and encoded differently.

    python make.py   # in this directory, with pyarrow installed
"""

import pyarrow as pa
import pyarrow.parquet as pq

turn = pa.struct([("from", pa.string()), ("value", pa.string())])
sharegpt = pa.table(
    {
        "id": ["a", "b", "c"],
        "conversations": pa.array(
            [
                [
                    {"from": "human", "value": "Name three rivers of Europe."},
                    {"from": "gpt", "value": "The Danube, the Rhine and the Loire."},
                ],
                [
                    {"from": "system", "value": "Be brief."},
                    {"from": "human", "value": "What is two and two?"},
                    {"from": "gpt", "value": "Four."},
                ],
                [],
            ],
            type=pa.list_(turn),
        ),
    }
)
pq.write_table(sharegpt, "sharegpt.parquet", compression="snappy")

alpaca = pa.table(
    {
        "instruction": ["Translate to French.", "Add the numbers.", "Translate to French."],
        "input": ["good morning", "3 and 4", None],
        "output": ["bonjour", "7", "merci beaucoup pour tout"],
    }
)
pq.write_table(
    alpaca,
    "alpaca.parquet",
    compression="zstd",
    use_dictionary=True,
    data_page_version="2.0",
)

prompts = pa.table(
    {
        "prompt": [f"prompt number {i}" for i in range(40)],
        "completion": [" ".join(["word"] * (i % 7 + 1)) for i in range(40)],
    }
)
pq.write_table(prompts, "train-00000-of-00001.parquet", compression="gzip", row_group_size=16)
