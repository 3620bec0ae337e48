"""Retrieval quality on Chinese, Japanese and Korean notes, per offline model (written for mdrecall, no data set).

    python bench/quality/cjk_eval.py [--models minilm,e5-small,e5-small-enpt,wordllama]
        [--out bench/results/quality_cjk.json]

A small agent memory in three languages (one note per fact, 18 in Chinese, Japanese and Korean, plus
English notes as distractors) and questions that ask for a fact in other words than the note uses. Each model
indexes the workspace through mdrecall (`MemoryIndex`, windows and all); every question is searched in
hybrid (the default) and vector mode. Scores: hit@1, hit@5 (the expected note's lines are in the top k),
MRR@10. all-MiniLM-L6-v2 knows few CJK word pieces, so its vector side is expected to be near chance.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from mdrecall.backends.builtin import MemoryIndex  # noqa: E402
from mdrecall.config.settings import LocalConfig, parse_config, resolve_settings  # noqa: E402
from mdrecall.embeddings.factory import ProviderResult  # noqa: E402
from mdrecall.embeddings.local import create_local_provider  # noqa: E402

# (file, heading, lines); each line is one fact and gets a question below.
NOTES: dict[str, list[str]] = {
    "memory/2026-03-02.md": [
        "# 2026-03-02",
        "",
        "## 工作",
        "我们决定把订单数据库从MySQL迁移到PostgreSQL，预计四月底完成。",
        "小王负责前端重构，他更喜欢用Vue而不是React。",
        "每周三下午两点开产品评审会，地点在三楼会议室。",
        "",
        "## 生活",
        "李娜下个月要去成都出差，顺便看望她的父母。",
        "办公室的咖啡机坏了，行政说周五之前会换一台新的。",
        "张伟对花生过敏，聚餐点菜时要特别注意。",
    ],
    "memory/2026-03-03.md": [
        "# 2026-03-03",
        "",
        "## 仕事",
        "新しいサーバーは大阪のデータセンターに設置することになった。",
        "田中さんは来週から育児休暇に入るので、レビューは佐藤さんが担当する。",
        "請求書のPDFはサーバー側で生成し、ブラウザでは作らない方針に決まった。",
        "",
        "## 私生活",
        "週末に京都へ紅葉を見に行って、写真をたくさん撮った。",
        "鈴木さんの猫が最近ダイエットを始めたらしい。",
        "毎朝六時に起きてジョギングするのが今年の目標だ。",
    ],
    "memory/2026-03-04.md": [
        "# 2026-03-04",
        "",
        "## 업무",
        "배포는 화요일과 목요일 오전 10시 이후에만 한다.",
        "민수 씨가 결제 모듈의 버그를 고쳤고, 내일 운영 서버에 반영된다.",
        "고객 데이터는 외부 AI 서비스에 보내지 않기로 팀장이 결정했다.",
        "",
        "## 개인",
        "지영 씨는 다음 달 제주도로 가족 여행을 간다.",
        "회사 근처에 새로 생긴 칼국수 집이 아주 맛있다.",
        "요즘 저녁마다 기타 연습을 하고 있다.",
    ],
    "memory/2026-03-05.md": [
        "# 2026-03-05",
        "",
        "The gateway runs on the Mac Studio in the office closet.",
        "Dana prefers metric units in every report.",
        "Release notes are written by whoever merges the last pull request of the week.",
        "The staging database is reset every Sunday night.",
    ],
}

# (question, file, line number of the answer)
QUESTIONS: list[tuple[str, str, int]] = [
    ("订单系统要换成哪种数据库？", "memory/2026-03-02.md", 4),
    ("谁在做前端的改造，他偏好哪个框架？", "memory/2026-03-02.md", 5),
    ("产品评审会议什么时候开？", "memory/2026-03-02.md", 6),
    ("李娜为什么要去四川？", "memory/2026-03-02.md", 9),
    ("什么时候能有新的咖啡设备？", "memory/2026-03-02.md", 10),
    ("哪位同事不能吃坚果类食物？", "memory/2026-03-02.md", 11),
    ("新しいマシンはどこの施設に置く？", "memory/2026-03-03.md", 4),
    ("田中さんが休む間、コードの確認は誰がする？", "memory/2026-03-03.md", 5),
    ("請求書のファイルはどこで作る？", "memory/2026-03-03.md", 6),
    ("秋の休みにどこへ出かけた？", "memory/2026-03-03.md", 9),
    ("ペットの体重を減らそうとしているのは誰の家？", "memory/2026-03-03.md", 10),
    ("今年の朝の運動の目標は？", "memory/2026-03-03.md", 11),
    ("언제 서비스를 배포해도 되나요?", "memory/2026-03-04.md", 4),
    ("결제 관련 오류는 누가 수정했나요?", "memory/2026-03-04.md", 5),
    ("고객 정보를 외부 인공지능에 보내도 되나요?", "memory/2026-03-04.md", 6),
    ("지영 씨는 휴가를 어디로 가나요?", "memory/2026-03-04.md", 9),
    ("사무실 주변에 맛있는 식당이 있나요?", "memory/2026-03-04.md", 10),
    ("퇴근 후에 어떤 악기를 배우고 있나요?", "memory/2026-03-04.md", 11),
]


def note_files() -> dict[str, str]:
    """One file per fact (`memory/notes/<day>-<line>.md`), so a question has one right note among ~22."""
    files = {}
    for rel, lines in NOTES.items():
        day = Path(rel).stem
        heading = ""
        for number, line in enumerate(lines, start=1):
            if line.startswith("## "):
                heading = line
            elif line and not line.startswith("# "):
                files[note_path(rel, number)] = f"# {day}\n\n{heading}\n\n{line}\n"
    return files


def note_path(rel: str, line: int) -> str:
    return f"memory/notes/{Path(rel).stem}-{line:02d}.md"


def covers(result: Any, path: str, line: int) -> bool:
    return result.path == note_path(path, line)


def score(index: MemoryIndex, mode: str, min_score: float | None = 0) -> dict[str, float]:
    """hit@1, hit@5, MRR@10 and the share of questions left empty (min_score None: every default, the
    answer floor of calibrated scores included)."""
    hits1 = hits5 = empty = 0
    rr = 0.0
    for question, path, line in QUESTIONS:
        results = index.search(question, mode=mode, min_score=min_score, max_results=10).results
        empty += not results
        rank = next((i for i, r in enumerate(results) if covers(r, path, line)), None)
        hits1 += rank == 0
        hits5 += rank is not None and rank < 5
        rr += 0.0 if rank is None else 1.0 / (rank + 1)
    n = len(QUESTIONS)
    return {
        "hit@1": round(hits1 / n, 3),
        "hit@5": round(hits5 / n, 3),
        "mrr@10": round(rr / n, 3),
        "empty": round(empty / n, 3),
    }


def evaluate(model: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        for rel, text in note_files().items():
            (ws / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws / rel).write_text(text, encoding="utf-8")
        cfg = parse_config({"local": {"model": model}})
        settings = resolve_settings(workspace=ws, state_dir=Path(tmp) / "state", config=cfg)
        provider = create_local_provider(LocalConfig(model=model))
        index = MemoryIndex(settings, ProviderResult(provider, requested="local"))
        try:
            index.sync(force=True)
            row = {"model": provider.model, "questions": len(QUESTIONS)}
            for mode in ("hybrid", "vector", "keyword"):
                row[mode] = score(index, mode)
            row["hybrid, every default"] = score(index, "hybrid", None)
        finally:
            index.close()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="minilm,e5-small,e5-small-enpt,wordllama")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "quality_cjk.json")
    args = parser.parse_args()
    rows = []
    print(f"{'model':<28} {'mode':<22} hit@1  hit@5  mrr@10  empty")
    for model in args.models.split(","):
        row = evaluate(model)
        rows.append(row)
        for mode in ("hybrid", "vector", "keyword", "hybrid, every default"):
            s = row[mode]
            cells = f"{s['hit@1']:.3f}  {s['hit@5']:.3f}  {s['mrr@10']:.3f}  {s['empty']:.3f}"
            print(f"{row['model']:<28} {mode:<22} {cells}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"questions": len(QUESTIONS), "results": rows}, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
