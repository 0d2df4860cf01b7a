from clag.llm.client import LLMClient
from clag.types import Question, Retrieval
from eval.answer import NOT_MENTIONED_OPTION, PaperAnswerer, answer_prompt, category5_options
from tests.scripted_llm import ScriptedBackend


def q(category, qid="q1", answer="Paris"):
    return Question(qid, "Where?", answer, category)


def test_prompts_by_category():
    assert answer_prompt(q(4), "CTX").startswith("Given the context: CTX, give a short-phrase answer")
    assert "DATE of the CONVERSATION" in answer_prompt(q(2), "CTX")
    assert "This is a LIST question" in answer_prompt(q(6), "CTX")
    assert "item1 ; item2 ; item3" in answer_prompt(q(6), "CTX")
    prompt5 = answer_prompt(q(5, answer="Yes"), "CTX")
    assert NOT_MENTIONED_OPTION in prompt5 and " or " in prompt5 and "Yes" in prompt5


def test_category5_option_order_is_seeded_per_question():
    orders = {category5_options(q(5, qid=f"q{i}", answer="A"), seed=42)[0] for i in range(20)}
    assert orders == {"A", NOT_MENTIONED_OPTION}                      # both orders occur
    assert category5_options(q(5, "q3", "A"), 42) == category5_options(q(5, "q3", "A"), 42)


def test_answerer_uses_the_parsed_answer_else_the_raw_text_and_c5_temperature():
    backend = ScriptedBackend(lambda r: '{"answer": "Paris"}' if "Where" in r.prompt else "Rome, surely")
    answerer = PaperAnswerer(LLMClient(backend))
    assert answerer(q(4), Retrieval([], "ctx")).text == "Paris"
    answerer(q(5, answer="Yes"), Retrieval([], "ctx"))
    assert [r.temperature for r in backend.requests] == [0.7, 0.5]
    assert all(r.tag == "answer" and r.json_schema["properties"]["answer"]["maxLength"] == 300
               for r in backend.requests)
    raw = PaperAnswerer(LLMClient(ScriptedBackend(lambda r: "Rome, surely")))
    answer = raw(q(4), Retrieval([], "ctx"))
    assert answer.text == "Rome, surely" and answer.debug["parsed"] is False
