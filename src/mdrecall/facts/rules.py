"""The capture rules: which user statements are worth keeping as facts, and their category. Pure text rules.

The rules look for the five things people want an assistant to remember — a preference, a decision, a
fact about a person, a contact, or an explicit "remember …" — in English, Portuguese, Spanish, French,
German, Chinese, Japanese and Korean, and standing statements that carry no cue word (STANDING_KINDS: who
does what or approves what, a team's procedure, a standing order, a plan for one's own product, one's own setup,
one's own health; and an event moved to a calendar date, DATED_CHANGE). They are
deliberately conservative (precision over recall): users
of OpenClaw's extension complained about captured chatter far more than about missed facts. Measured on
`bench/quality/capture_set.jsonl` by `bench/quality/capture_eval.py` (see docs/facts.md).

Beside the rules, `extract_rules` takes an optional scorer: the capture classifier on the embedding model's
sentence vectors (`classifier.py`), which catches what the rules cannot see without understanding.

Never captured: assistant text, questions (a question about what is remembered too: "do you remember ...?"),
orders scoped to the question at hand ("for this question, ..."), injected `<relevant-memories>` blocks, a
statement carrying a credential, PIN, card, identity number or seed phrase (dropped, not stored redacted), text
the user quotes from someone else (pasted emails, `>` quotes, "translate this review: …"), tool/markup output,
very short or very long messages.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from mdrecall.facts.model import strip_injected
from mdrecall.text.quoted import own_words
from mdrecall.text.redact import sensitive_kind
from mdrecall.text.tokens import has_cjk


# texts -> (probability worth keeping, category or None) per text: the capture classifier (classifier.py)
class Scorer(Protocol):
    """texts -> (probability of being worth keeping, category or None) each; kept at `threshold` or above."""

    threshold: float

    def __call__(self, texts: list[str]) -> list[tuple[float, str | None]]: ...


MIN_CHARS = 8
MAX_CHARS = 500


def has_secret(text: str) -> bool:
    """A credential, PIN, card, identity number or seed phrase: the statement is dropped, never stored redacted."""
    return sensitive_kind(text) is not None


def _rx(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE | re.UNICODE)


# Word boundary that also works next to accented letters: (?<!\w) / (?!\w).
B, E = r"(?<!\w)", r"(?!\w)"

REMEMBER = _rx(
    # en
    rf"{B}(just\s+so\s+you\s+know|fyi|for\s+your\s+information|heads\s+up){E}",
    rf"{B}(make|take)\s+a\s+note{E}",
    rf"{B}write\s+(this|that)\s+down{E}",
    rf"{B}(please\s+)?remember\s+(that|this|:|my|i|we|the\s+\w+){E}",
    rf"{B}(don'?t|do\s+not|never)\s+forget\s+(that|my|i|we){E}",
    rf"{B}keep\s+in\s+mind\s+(that|my|i|we){E}",
    rf"{B}(note|make\s+a\s+note)\s+that{E}",
    rf"{B}for\s+future\s+reference{E}",
    r"^\s*(please\s+)?remember\s*[:,\u2014-]",
    rf"{B}note\s+to\s+self{E}",
    rf"{B}(note|noted)\s+for\s+later{E}|{B}keep\s+(this|that)\s+in\s+(your\s+notes|mind){E}|{B}for\s+the\s+record{E}",
    r"^\s*(guarda|grava)\s+(isso|isto|essa|esta|a[ií])\s*[:,]|^\s*(apúntalo|apuntalo|anótalo|anotalo|toma\s+nota|"
    r"guarda\s+esto|note\s+bien|à\s+noter|a\s+noter|pour\s+info|garde\s+(ça|ca)\s+en\s+t[êe]te|merk\s+dir\s+das|"
    r"f[üu]r\s+sp[äa]ter)\s*[:,]",
    r"^\s*(lembrando|lembrete|lembre-se|anota(\s+a[ií])?|recuerda|recordatorio|apunta|rappel|retiens|à\s+retenir|"
    r"a\s+retenir|merke?|wichtig|notiz|memo)\s*[:,]",
    r"^\s*(メモ(して(ください)?|しておいて)?|메모(해\s*(줘|주세요|둬|두세요))?|备忘|備忘)\s*[:：]",
    # pt
    rf"{B}(lembre(-se)?|lembra|grave|anote)\s+(que|disso|isso|de\s+que|:){E}",
    rf"{B}anota\s+(a[ií]|isso|que|:)",
    rf"{B}n[ãa]o\s+(esque[çc]a|se\s+esque[çc]a)\s+(que|de\s+que|disso){E}",
    # es
    rf"{B}(recuerda|recuérdalo|acuérdate|ten\s+en\s+cuenta|apunta|anota)\s+(que|esto|de\s+que|:){E}",
    rf"{B}no\s+olvides\s+(que|esto){E}",
    rf"{B}apunta\s+(que|esto|:)",
    # fr
    rf"{B}(souviens-toi|rappelle-toi|retiens|note)\s+(que|qu'|bien|de\s+ça|:)",
    rf"{B}n'oublie\s+pas\s+(que|qu')",
    # de
    rf"{B}(merk|merke)\s+dir{E}",
    rf"{B}(denk|denke)\s+daran{E}",
    rf"{B}vergiss\s+nicht{E}",
    rf"{B}(bitte\s+)?merken\s*:",
    rf"{B}zur\s+info(rmation)?{E}",
    rf"{B}(bitte\s+)?(notier|notiere)\s+(dir|dass){E}",
    # zh / ja / ko
    r"(请|請)?(记住|記住|记得|記得|别忘了|別忘了|不要忘记|不要忘記)",
    r"(请|請)?(记一下|記一下|记下来|記下來|记着|記著)",
    # (not "〜するのを忘れないで" / "〜하는 거 잊지 마": a reminder to do something, not a thing to keep)
    r"(覚えといて|覚えとい(て|てね)|メモっといて|メモっておいて|기억해\s*놔|적어\s*(둬|두세요|놔)|메모해\s*놔)",
    r"(覚えて(おいて|おいてください|ください|ね)|(?<!の)(?<!こと)(?<!のを)(?<!ことを)忘れないで|メモして)",
    r"(기억해\s*(줘|주세요|둬|두세요)|기억하세요|(?<!거\s)(?<!거)(?<!것\s)(?<!것)(?<!걸\s)(?<!걸)잊지\s*마)",
)

PREFERENCE = _rx(
    # en
    rf"{B}i'?m\s+(not\s+)?(a\s+)?(big\s+|huge\s+|real\s+)?fan\s+of{E}",
    rf"{B}i\s+find\s+.{{1,40}}\s+(painful|annoying|tedious|distracting|confusing|easier|nicer|clearer){E}",
    rf"{B}(easier|nicer|better|works\s+best)\s+for\s+me{E}",
    rf"{B}(that'?s|this\s+is|is)\s+how\s+i\s+(work|like\s+it){E}",
    rf"{B}when\s+you\s+(write|answer|reply|respond|give|show|format|draft)\b.{{0,40}},\s*(please\s+)?(use|always|"
    rf"never|keep|avoid|put|add|uppercase|lowercase|include|skip){E}",
    rf"{B}please\s+(stick\s+to|keep\s+using|avoid\s+using){E}",
    rf"{B}i\s+(really\s+|strongly\s+|much\s+|usually\s+|always\s+)?(prefer|love|hate|dislike|enjoy|can'?t\s+stand){E}",
    rf"{B}i\s+(really\s+)?(like|want)\s+(my|to|the|it\s+when|when|\w+ing|[a-z]+\s+(over|better|more|rather)){E}",
    rf"{B}i\s+(do\s+not|don'?t)\s+(like|want|enjoy|use|eat|drink){E}",
    rf"{B}i'?d\s+(rather|prefer){E}",
    rf"{B}my\s+(favou?rite|preferred|go-to)\s+\w+",
    rf"{B}i\s+always\s+(use|want|write|drink|eat|take|code|work){E}",
    rf"{B}i\s+never\s+(use|want|write|drink|eat|take){E}",
    rf"{B}(please\s+)?(always|never)\s+(use|reply|answer|write|respond|call\s+me|format|show|put|add){E}",
    # pt
    rf"{B}(eu\s+)?(prefiro|adoro|odeio|detesto){E}",
    rf"{B}(eu\s+)?curto\s+(mais|muito|demais)?{E}",
    rf"{B}(sou|n[ãa]o\s+sou)\s+f[ãa]\s+de{E}",
    rf"{B}(eu\s+)?(gosto|gosto\s+muito)\s+(de|da|do|mais){E}",
    rf"{B}(eu\s+)?n[ãa]o\s+(gosto|suporto|uso|como|bebo){E}",
    rf"{B}(meu|minha)\s+\w+\s+(favorit[oa]|preferid[oa]){E}",
    rf"{B}(sempre|nunca)\s+(use|uso|responda|escreva|bebo|como){E}",
    # es
    rf"{B}(yo\s+)?(prefiero|odio|detesto){E}",
    rf"{B}(a\s+mí\s+)?(me\s+gusta(n)?|me\s+encanta(n)?)\s+(el|la|los|las|más|mucho|\w+){E}",
    rf"{B}no\s+me\s+gusta(n)?{E}",
    rf"{B}(soy|no\s+soy)\s+fan\s+de{E}",
    rf"{B}mi\s+\w+\s+(favorit[oa]|preferid[oa]){E}",
    rf"{B}(siempre|nunca)\s+(usa|uso|responde|escribe|bebo|como){E}",
    # fr
    rf"{B}je\s+(préfère|prefere|déteste|deteste|adore){E}",
    rf"{B}j'(aime|adore|préfère|prefere)\s+",
    rf"{B}je\s+n'aime\s+pas{E}",
    rf"{B}(mon|ma)\s+\w+\s+(préféré|préférée|favori|favorite){E}",
    rf"{B}(toujours|jamais)\s+(utiliser|répondre|écrire){E}",
    # de
    rf"{B}ich\s+(bevorzuge|liebe|hasse|mag\s+(kein|keine|lieber|\w+)|trinke\s+lieber|nehme\s+lieber){E}",
    rf"{B}ich\s+\w+\s+lieber{E}",
    rf"{B}mein(e)?\s+lieblings\w*",
    rf"{B}am\s+liebsten{E}",
    rf"{B}(immer|nie)\s+(verwende|benutze|nutze|antworte|schreibe){E}",
    # zh
    r"我(更|比较|比較|最|很|非常|不)?(喜欢|喜歡|偏好|讨厌|討厭|爱|愛)",
    r"我(最)?(常用|习惯|習慣)",
    r"(总是|總是|一直|永远|永遠|不要)(用|使用|回答|回复)",
    # ja
    r"(が|は)(好き|大好き|嫌い|苦手)(です|だ|なんです)?",
    r"(がいいです|が好きです|のほうがいい|朝型|夜型)",
    r"(の方が(いい|好き)|を好みます|派です)",
    r"(いつも|必ず)\S{0,12}(使って|使います|使う|して)",
    # ko
    r"(좋아해|좋아합니다|좋아하는|싫어해|싫어합니다|선호합니다|선호해|선호하는)",
    r"(가|이)\s*(더\s*)?(좋아요|편해요)|싫어요|더\s*좋아",
    r"(항상|절대)\s*\S{0,10}(사용|써|쓰세요|해\s*줘)",
    # what someone does not eat or drink, in every language ("我不喝咖啡", "no bebo alcohol", "술 안 마셔요")
    r"^(yo\s+)?no\s+(como|bebo|tomo)\s+(carne|pescado|cerdo|gluten|lácteos|alcohol|café|azúcar|marisco)",
    rf"{B}je\s+ne\s+(mange|bois)\s+(pas|jamais|plus)\s+(de\s+|d'|du\s+)?(viande|poisson|porc|gluten|alcool|café|"
    rf"sucre|lait|fruits\s+de\s+mer|produits\s+laitiers){E}",
    rf"{B}ich\s+(esse|trinke)\s+(kein(en)?|keine|nie|niemals)\s+\w+",
    r"^我(从来|從來|从不|從不|平时|平時)?(不|不太|从不|從不)(喝|吃|抽烟|抽煙)(?!了)(?!.*(吗|嗎|[?？]))\S",
    r"^(?!それ|これ|あれ)\S{1,12}(を|は)(飲みません|食べません|飲まないです|食べないです|飲まない|食べない)[。.!]?$",
    r"^(저는\s*|나는\s*|나\s+)?(술|커피|고기|돼지고기|소고기|해산물|우유|유제품|밀가루|매운\s*(거|음식)|생선|회|맥주|"
    r"와인|탄산|설탕|카페인|날것)(은|는|을|를)?\s*(안|못)\s*(마셔|먹어|마십니다|먹습니다|마셔요|먹어요)",
)

DECISION = _rx(
    # en
    rf"{B}(going|moving)\s+forward{E}",
    rf"{B}(the\s+)?(team|we|everyone)\s+(voted|concluded|committed)\s+(to|on|that){E}",
    rf"{B}i('m|\s+am)\s+going\s+to\s+(use|go\s+with|switch\s+to|build\s+(it\s+)?with|write\s+it\s+in){E}",
    rf"{B}(final\s+answer|it'?s\s+settled|that'?s\s+settled){E}",
    rf"{B}we\s+settled\s+on{E}",
    rf"{B}(we|i)\s+(have\s+|'ve\s+)?(decided|agreed|chose|chosen|settled\s+on|picked){E}",
    rf"{B}(we|i)'ve\s+(decided|agreed|chosen|settled\s+on){E}",
    rf"{B}(we|i)('ll|\s+will)\s+(go\s+with|use|stick\s+with|switch\s+to|move\s+to|standardi[sz]e\s+on){E}",
    rf"{B}(we('re|\s+are)|i'm|i\s+am)\s+(going\s+with|switching\s+to|moving\s+to|sticking\s+with){E}",
    rf"{B}let'?s\s+(go\s+with|use|stick\s+with|standardi[sz]e\s+on){E}",
    rf"{B}(the\s+)?decision\s+(is|was){E}",
    rf"{B}from\s+now\s+on{E}",
    # pt
    rf"{B}(n[óo]s\s+)?(decidimos|decidi|escolhemos|combinamos|optamos){E}",
    rf"{B}vamos\s+(usar|ficar\s+com|adotar|mudar\s+para|migrar|trocar|largar|abandonar){E}",
    rf"{B}(fechamos|ficamos)\s+com{E}",
    rf"{B}a\s+partir\s+de\s+agora{E}",
    # es
    rf"{B}(hemos\s+decidido|decidimos|decidí|elegimos|acordamos|optamos){E}",
    rf"{B}vamos\s+a\s+(usar|quedarnos\s+con|adoptar|cambiar\s+a|migrar|dejar\s+de|abandonar){E}",
    rf"{B}(nos\s+quedamos\s+con|al\s+final\s+(elegimos|usamos|vamos\s+con)){E}",
    rf"{B}a\s+partir\s+de\s+ahora|de\s+ahora\s+en\s+adelante",
    # fr
    rf"{B}(nous\s+avons|on\s+a|j'ai)\s+(décidé|choisi|opté){E}",
    rf"{B}on\s+(va\s+utiliser|part\s+sur|garde){E}",
    rf"{B}(désormais|dorénavant|à\s+partir\s+de\s+maintenant){E}",
    # de
    rf"{B}(wir|ich)\s+(haben|habe)\s+(uns\s+)?(entschieden|beschlossen|geeinigt|gewählt){E}",
    rf"{B}wir\s+(nehmen|verwenden|nutzen|bleiben\s+bei)\s+(ab\s+jetzt|künftig|ab\s+sofort)?",
    rf"{B}(ab\s+jetzt|ab\s+sofort|von\s+nun\s+an|künftig){E}",
    # zh / ja / ko
    r"(我们|我們|我|团队|團隊|公司)(已经|已經)?(决定|決定|选定|選定|定了)",
    r"(我们|我們|我)(最后|最後|最终|最終)?(选了|選了|选用|選用|用了)",
    r"(以后|以後|今后|今後)(都|就|统一|統一)",
    r"(決めました|決めた|決定しました|に決定|今後は|これからは)",
    r"(にしました|に決めました|にすることにしました)",
    r"(결정했|결정하였|정했어|정했습니다|앞으로는|앞으로\s)",
    r"(하기로\s*했|하기로\s*결정|쓰기로\s*했|대신\s*\S+(을|를)\s*(씁니다|써요|사용합니다|사용해요))",
)

PERSON = _rx(
    rf"{B}(our|my)\s+(cto|ceo|cfo|coo|lead|tech\s+lead|pm|product\s+manager|designer|boss|manager|landlord|"
    rf"accountant|lawyer|doctor|neighbou?r|teacher|coach)\s+(is\s+called|is\s+named|'s\s+name\s+is){E}",
    rf"{B}i\s+(recently\s+|just\s+)?(moved|relocated)\s+to{E}",
    rf"{B}i\s+(recently\s+|just\s+)?(started|joined)\s+(at|a\s+new\s+job|working\s+at|working\s+for){E}",
    # en: facts about the user or people around them
    rf"{B}my\s+(name|wife|husband|partner|son|daughter|kids?|children|mother|mom|mum|father|dad|brother|sister|"
    rf"boss|manager|cofounder|co-founder|colleague|friend|dog|cat|birthday|anniversary|team|company|employer|"
    rf"address|timezone|time\s+zone|doctor|dentist|landlord)(\s+\w+)?('s)?\s+(is|are|was|works|lives|has|name|birthday|"
    rf"called|named|\w+s){E}",
    rf"{B}i\s+(am|'m)\s+(a|an|the)\s+\w+",
    rf"{B}i'm\s+(a|an|the)\s+\w+",
    rf"{B}i\s+(work|live|grew\s+up)\s+(at|in|for|as|on|near){E}",
    rf"{B}i('m|\s+am)\s+(allergic|vegetarian|vegan|based|located|moving|married|left-handed|colou?r-?blind){E}",
    rf"{B}i\s+have\s+(a|an|two|three|\d+)\s+(kids?|children|sons?|daughters?|dogs?|cats?|brothers?|sisters?){E}",
    rf"{B}i\s+was\s+born\s+(in|on){E}",
    rf"{B}[A-Z][a-z]+('s)?\s+(birthday|phone|email|wife|husband|son|daughter)\s+is{E}",
    rf"{B}[A-Z][a-z]+\s+is\s+my\s+(wife|husband|partner|son|daughter|boss|manager|cofounder|co-founder|colleague|"
    rf"friend|brother|sister|mother|father|doctor|dentist|accountant|lawyer){E}",
    # pt
    rf"{B}(meu|minha)\s+(nome|esposa|marido|filh[oa]|m[ãa]e|pai|irm[ãa]o?|chefe|gerente|s[óo]ci[oa]|"
    rf"anivers[áa]rio|empresa|cachorro|gat[oa])\s+(é|se\s+chama|mora|trabalha|tem|faz){E}",
    rf"{B}(eu\s+)?(moro|trabalho|nasci)\s+(em|na|no|num|numa|como|para){E}",
    rf"{B}(eu\s+)?sou\s+(alérgic[oa]|vegetarian[oa]|vegan[oa]|casad[oa]|engenheir[oa]|médic[oa]|professor[a]?|"
    rf"designer|desenvolvedor[a]?|de\s+\w+){E}",
    rf"{B}me\s+chamo{E}",
    # es
    rf"{B}mi\s+(nombre|esposa|esposo|marido|mujer|hij[oa]|madre|padre|herman[oa]|jefe|jefa|socio|cumpleaños|"
    rf"empresa|perro|gato)\s+(es|se\s+llama|vive|trabaja|tiene|cumple){E}",
    rf"{B}(yo\s+)?(vivo|trabajo|nací)\s+(en|como|para){E}",
    rf"{B}(yo\s+)?soy\s+(alérgic[oa]|vegetarian[oa]|vegan[oa]|casad[oa]|ingenier[oa]|médic[oa]|profesor[a]?|"
    rf"diseñador[a]?|desarrollador[a]?|de\s+\w+){E}",
    rf"{B}me\s+llamo{E}",
    # fr
    rf"{B}(mon|ma)\s+(nom|femme|mari|fils|fille|mère|père|frère|sœur|soeur|chef|patron|associé|anniversaire|"
    rf"entreprise|chien|chat)\s+(est|s'appelle|habite|travaille|a){E}",
    rf"{B}(j'habite|je\s+vis|je\s+travaille|je\s+suis\s+né)",
    rf"{B}je\s+suis\s+(allergique|végétarien|végétarienne|végane?|marié|mariée|ingénieur|médecin|professeur|"
    rf"développeur|développeuse|designer|de\s+\w+){E}",
    rf"{B}je\s+m'appelle{E}",
    # de
    rf"{B}mein(e)?\s+(name|frau|mann|sohn|tochter|mutter|vater|bruder|schwester|chef|chefin|geburtstag|firma|"
    rf"hund|katze|partner|partnerin)\s+(ist|heißt|heisst|wohnt|arbeitet|hat){E}",
    rf"{B}ich\s+(wohne|lebe|arbeite)\s+(in|bei|als|für|fuer){E}",
    rf"{B}ich\s+bin\s+(allergisch|vegetarier|vegetarierin|veganer|veganerin|verheiratet|ingenieur|ingenieurin|"
    rf"arzt|ärztin|lehrer|lehrerin|entwickler|entwicklerin|designer|designerin|aus\s+\w+){E}",
    rf"{B}ich\s+hei(ß|ss)e{E}",
    # zh
    r"我(叫|的名字是|名叫|住在|在\S{1,12}(工作|上班)|是(一名|一个|一個)?\S{0,6}(工程师|工程師|医生|醫生|老师|老師|设计师|設計師|学生|學生|人)|对\S{1,6}过敏|對\S{1,6}過敏)",
    r"我的(妻子|丈夫|老婆|老公|儿子|兒子|女儿|女兒|妈妈|媽媽|爸爸|老板|老闆|经理|經理|生日|同事|朋友)",
    r"我(妻子|丈夫|老婆|老公|儿子|兒子|女儿|女兒|妈妈|媽媽|爸爸)(今年|是|叫|在|住)",
    # ja
    r"(私|僕|俺|わたし)の(名前|妻|夫|息子|娘|母|父|上司|誕生日|会社)は",
    r"(私|僕|俺|わたし)は\S{1,20}(です|に住んでいます|で働いています|アレルギー)",
    r"(に住んでいます|で働いています|アレルギーがあります)",
    # ko
    r"(제|내)\s*(이름은|아내는|남편은|아들은|딸은|생일은|상사는|회사는)",
    r"(저는|나는).{1,30}(일하고\s*있|살고\s*있|근무하고)",
    r"(저는|나는)\s*\S{1,20}(입니다|이에요|예요|살고\s*있|일하고\s*있|알레르기)",
    r"(에\s*살고\s*있어요|에서\s*일하고\s*있|알레르기가\s*있)",
)

EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
PHONE = re.compile(r"(?<!\w)\+?\d[\d\s().-]{7,}\d(?!\w)")
# what the phone pattern also meets but is no number to call: a date (2024-06-01, 01.06.2024) or a version
_NOT_A_PHONE = re.compile(r"\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{4}|\d+(\.\d+){2,}")


def has_phone(text: str) -> bool:
    """A phone number in the text (7+ digits in groups), not a date or a version that looks like one."""
    return any(not _NOT_A_PHONE.fullmatch(m.group().strip()) for m in PHONE.finditer(text))


CONTACT = _rx(
    rf"{B}(my|his|her|their|[A-Z][a-z]+'s)\s+(e-?mail|phone|number|cell|mobile|address|handle|slack|telegram|whatsapp)",
    rf"{B}(reach|contact|call|text|email|ping)\s+(me|him|her|them|[A-Z][a-z]+)\s+(at|on|via){E}",
    rf"{B}(meu|minha|seu|sua)\s+(e-?mail|telefone|número|celular|endereço){E}",
    rf"{B}(mi|su)\s+(correo|teléfono|número|celular|dirección){E}",
    rf"{B}(mon|son|sa)\s+(e-?mail|courriel|téléphone|numéro|adresse){E}",
    rf"{B}(meine|seine|ihre)\s+(e-?mail|telefonnummer|nummer|handynummer|adresse){E}",
    r"(邮箱|郵箱|电话|電話|手机|手機|地址)(是|：|:)",
    r"(メール|電話番号|アドレス|連絡先)は",
    r"(이메일|전화번호|연락처|주소)(는|은)",
)

# One-off deixis: the statement is about the work at hand ("in this branch", "this function", "now", "today"),
# so it is a request about the current task, not something to remember. A rule hit carrying it is left to the
# classifier (which sees it as a feature); "from now on", "this year" are standing and do not count.
_UNIT = (
    r"(function|method|file|branch|pr|pull\s+request|test|class|module|line|lines|variable|query|loop|snippet|"
    r"paragraph|article|document|message|e-?mail|commit|diff|script|section|page|endpoint|component|table|column|"
    r"bug|error|ticket|code|one)"
)
_PERIOD = r"(ano|mês|mes|semana|semestre|trimestre|año|année|annee|mois|jahr|monat|woche|quartal)"
DEIXIS = _rx(
    rf"{B}(this|these|that)\s+{_UNIT}{E}",
    rf"{B}(right\s+now|for\s+now|today|here){E}",
    rf"(?<!from\s){B}now{E}(?!\s+on)",
    rf"{B}(esse|essa|este|esta|nesse|nessa|neste|nesta|desse|dessa|ese|esa|estos|estas){E}\s+(?!{_PERIOD}{E})\w+",
    rf"(?<!de\s){B}(agora|ahora){E}",
    rf"{B}(hoje|aqui|hoy|aquí|ici|aujourd'hui|heute|hier|gerade){E}",
    rf"(?<!partir\sde\s){B}maintenant{E}",
    rf"(?<!ab\s){B}jetzt{E}",
    rf"(?<!que\s){B}(ce|cette|cet|ces)\s+(?!{_PERIOD}{E})\w+",  # not "quoi que ce soit"
    rf"{B}(diese[nmrs]?)\s+(?!{_PERIOD}{E})\w+",
    r"(这个|这段|这里|这篇|这行|这条|这次|现在|今天|這個|這段|這裡|這篇|現在)",
    r"(この|ここ|今日|今すぐ)",
    r"(^|\s)이\s+\S",
    r"(여기|지금|오늘)",
)
# Standing-rule markers: always, never, every, all, no ..., from now on (features of the capture classifier).
HABIT = _rx(
    rf"{B}(always|never|every|each|all|whenever|every\s+time|by\s+default|in\s+general|no){E}",
    rf"{B}(sempre|nunca|todo|toda|todos|todas|cada|sem|nada\s+de|siempre|sin){E}",
    rf"{B}(toujours|jamais|chaque|tous|toutes|pas\s+d[e'])",
    rf"{B}(immer|nie|niemals|jede[nmrs]?|alle|kein|keine){E}",
    r"(总是|總是|一律|每|都要|统一|統一|以后|以後|不要|永远)",
    r"(常に|必ず|いつも|毎|すべて|全て|ないで)",
    r"(항상|매|모든|절대|늘)",
)
# A task verb opening the statement: "Run the migrations ...", "Escreve um e-mail ..." (a classifier feature).
TASK_START = _rx(
    r"^(please\s+)?(run|write|fix|add|rename|translate|summari[sz]e|deploy|draft|check|make|split|undo|create|"
    r"generate|refactor|delete|remove|update|move|change|put|convert|explain|review|send|reply|open|build|rewrite|"
    r"format|sort|list|show|give\s+me|tell|find|look\s+at|clean\s+up)\s+(the|a|an|this|that|these|those|my|our|"
    r"some|it|him|her|them)\s",
    r"^(roda|rode|escreve|escreva|arruma|arrume|adiciona|adicione|renomeia|traduz|traduza|resume|resuma|coloca|"
    r"coloque|troca|troque|faz|faça|deixa|cria|crie|manda|mande|corrige|corrija|revisa|revise)\s+"
    r"(o|a|os|as|um|uma|esse|essa|este|esta|isso|meu|minha|para)\s",
    r"^(ejecuta|escribe|arregla|añade|cambia|traduce|resume|pon|haz|crea|manda|revisa|redacta|corrige)\s+"
    r"(el|la|los|las|un|una|este|esta|ese|esa|esto|mi|al|a)\s",
    r"^(lance|écris|corrige|ajoute|renomme|traduis|résume|mets|fais|crée|envoie|rédige|relis)\s+"
    r"(le|la|les|l'|un|une|ce|cette|cet|mon|ma|au|à)",
    r"^(führe|schreib|schreibe|repariere|füge|benenne|übersetze|fasse|mach|erstelle|sende|korrigiere)\s+"
    r"(den|die|das|dem|der|ein|eine|einen|diese[nmrs]?|mein|meine|mir)\s",
)
# Someone's own world: I, we, our team, you ... (a classifier feature; general knowledge has none).
PEOPLE = _rx(
    rf"{B}(i|i'm|my|me|we|we're|our|us|you|your|team|eu|meu|minha|nós|nosso|nossa|equipe|yo|mi|mis|nosotros|"
    rf"nuestro|nuestra|equipo|je|j'|mon|ma|mes|nous|notre|on|équipe|ich|mein|meine|wir|unser|unsere){E}",
    r"(我|团队|團隊|私|僕|うち|チーム|우리|저는|제|내|팀)",
)
# What an assistant produces or how it works, the subject of standing style rules: answers, explanations,
# commit messages, comments, docstrings, variable names, tests, indentation ... (a classifier feature).
STYLE = _rx(
    rf"{B}(answers?|repl(y|ies)|responses?|explanations?|summar(y|ies)|commit(\s+message)?s|comments?|docstrings?|"
    rf"variables?|variable\s+names|names|tests?|indentation|tabs|spaces|emojis?|jargon|tone|language|english|"
    rf"spelling|units|dates|code\s+blocks?|bullet\s+points|headings|examples?|imports?|quotes|types?\s+hints?|indent|"
    rf"camel\s*case|snake\s*case|preamble|intro(duction)?){E}",
    rf"{B}(respostas?|explicaç(ão|ões)|commits?|comentários?|variáveis|nomes|testes?|emojis?|jarg[ãa]o|inglês|"
    rf"portugu[êe]s|respuestas?|explicaciones?|comentarios?|variables|nombres|pruebas|tests|emojis|jerga|inglés|"
    rf"español|réponses?|explications?|commentaires?|noms|anglais|français|tutoiement|vouvoiement|antworten?|"
    rf"erklärungen?|kommentare?|variablennamen|namen|tests?|englisch|deutsch|duz|docstrings?|indentação|indentación|"
    rf"sangría|introduction|einleitung|einrückung){E}",
    r"(回答|回复|回復|解释|解釋|注释|註釋|提交信息|变量名|變量名|表情|英文|中文|测试|測試|文档|文檔|"
    r"返事|回答|説明|コメント|コミットメッセージ|変数名|絵文字|英語|日本語|テスト|ドキュメント|"
    r"답변|대답|설명|주석|커밋\s*메시지|변수\s*이름|이모지|영어|한국어|테스트|문서|존댓말|반말|"
    r"缩进|縮排|驼峰|駝峰|インデント|キャメルケース|スネークケース|들여쓰기|변수명|카멜\s*케이스|스네이크\s*케이스)",
)
# A passing opinion or guess: "I think the bug is in the cache", "je crois que ..." (a classifier feature).
HEDGE = _rx(
    rf"{B}(i\s+(think|believe|guess|suspect|feel\s+like)|maybe|probably|perhaps){E}",
    rf"{B}(acho\s+que|creio\s+que|talvez|creo\s+que|quizás|quizá|je\s+(crois|pense)|peut-être|"
    rf"ich\s+(glaube|denke|vermute)|vielleicht|wahrscheinlich){E}",
    r"(我觉得|我覺得|我认为|我認為|可能|也许|也許|と思います|と思う|かもしれ|것\s*같아|것\s*같아요|것\s*같습니다)",
    # a guess added at the end: "..., creo", "..., je crois", "..., glaube ich"
    r",\s*(i\s+think|creo|acho|je\s+crois|je\s+pense|ich\s+glaube|glaube\s+ich|denke\s+ich)\s*[.!]?\s*$",
)
# General knowledge: who made a public product, when it came out, what the world is like ("Rust was first released
# in 2015", "O Git foi criado pelo Linus Torvalds", "Goには1.18でジェネリクスが入りました") (a classifier feature).
KNOWLEDGE = _rx(
    rf"{B}(was|were)\s+(first\s+|originally\s+)?(created|invented|developed|designed|founded|released|written|built|"
    rf"introduced|launched|published|added|removed|deprecated)\s+(by|in|at|from|with){E}",
    rf"{B}(was|were)\s+(first\s+|originally\s+)?(created|invented|developed|designed|founded|released|built|launched)[.]",
    rf"{B}(is|are)\s+(developed|maintained|made|published|owned)\s+by{E}",
    rf"{B}(é|são|es|son|est|sont)\s+(desenvolvid[oa]s?|mantid[oa]s?|desarrollad[oa]s?|mantenid[oa]s?|développée?s?|"
    rf"maintenue?s?)\s+(por|pela|pelo|par){E}|{B}lo\s+desarrolla{E}",
    rf"{B}(wird|werden)\s+von\s+.{{1,40}}\s+(entwickelt|gepflegt|herausgegeben){E}",
    rf"{B}in\s+(1[89]\d\d|20[01]\d){E}",
    rf"{B}(foi|foram|fue|fueron)\s+(criad[oa]s?|cread[oa]s?|inventad[oa]s?|desenvolvid[oa]s?|desarrollad[oa]s?|"
    rf"lançad[oa]s?|lanzad[oa]s?|fundad[oa]s?|construíd[oa]s?|construid[oa]s?|publicad[oa]s?){E}",
    rf"{B}(a|ont)\s+été\s+(créée?s?|inventée?s?|développée?s?|conçue?s?|fondée?s?|construite?s?|publiée?s?|"
    rf"lancée?s?|sortie?s?){E}",
    rf"{B}(wurden?)\s+.*(entwickelt|erfunden|gegründet|veröffentlicht|erschaffen|gebaut|eingeführt){E}|{B}erschien{E}",
    r"(由.{1,20}(创造|創造|开发|開發|发明|發明|创立|創立|设计|設計)|发布于|發布於|最早发布|诞生于|誕生於|是世界上)",
    r"(が(作|開発|発明|設計)(り|し)ました|が開発した|が開発しています|にリリースされ|が入りました|で導入され|一番高い|世界で)",
    r"(이|가)\s*(만들었|개발합니다|개발하고\s*있)|에서\s*만들었|(처음|최초로)\s*(공개|출시|발표)|출시되었|개발했습니다|개발되었",
)
# A one-off scope: just for this answer, only this time, in this PR (a classifier feature).
ONCE = _rx(
    rf"{B}(just|only)\s+(for\s+)?(this|that)\s+(once|one|time|answer|reply|response|message|question|pr|commit){E}",
    rf"{B}(just|only)\s+(this|that)\s+once{E}|{B}for\s+(this|that)\s+(one\s+)?(answer|reply|response|pr){E}",
    # scoped to the question or task at hand: "for this question, always check utils.py first"
    rf"{B}(for|in|during)\s+(this|the\s+current)\s+(question|task|request|conversation|chat|session|exercise|ticket){E}",
    rf"{B}(para|en|nesta|neste|por)\s+(esta|este|essa|esse)\s+(pregunta|pergunta|tarea|tarefa|conversación|conversa|"
    rf"sesión|sessão|petición|pedido){E}|{B}(só|solo|sólo)\s+(nesta|en\s+esta|para\s+esta)\s+(pergunta|pregunta|"
    rf"conversa|conversación){E}",
    rf"{B}(pour|dans)\s+(cette|ce)\s+(question|tâche|conversation|session|demande){E}|{B}(für|in|bei)\s+diese[rnms]?\s+"
    rf"(frage|aufgabe|unterhaltung|sitzung|anfrage|konversation){E}",
    r"(这个问题|這個問題|这道题|這道題|这次对话|這次對話|本次对话|本次對話|この質問|今回の質問|この会話|この(タスク|依頼)|"
    r"이\s*질문|이번\s*질문|이번\s*대화|이\s*대화)",
    rf"{B}(in|for)\s+this\s+(pr|pull\s+request|mr|merge\s+request|commit|branch){E}",
    rf"{B}(don't|do\s+not)\s+forget\s+to{E}",
    rf"{B}(só|solo|sólo|apenas)\s+(nesta|neste|desta|para\s+esta|para\s+este|por\s+esta|esta|este)\s*(vez|resposta|"
    rf"respuesta|pr|mensagem|mensaje)?{E}|{B}(neste|nesta|en\s+este|en\s+esta)\s+(pr|commit|branch|rama){E}",
    rf"{B}(não|nao)\s+esque[çc][ae]r?\s+de{E}|{B}no\s+olvides\s+\w+(ar|er|ir){E}",
    rf"{B}(juste|seulement|uniquement)\s+(pour\s+)?(cette|ce)\s+(fois|réponse|message|pr){E}|"
    rf"{B}pour\s+cette\s+fois|{B}dans\s+(cette|ce)\s+(pr|commit|branche){E}|{B}n'oublie\s+pas\s+d[e']",
    rf"{B}nur\s+(für\s+)?(diese[nmrs]?|dieses)\s+(eine\s+)?(mal|antwort|nachricht|pr){E}|{B}(in|für)\s+diese[nmrs]?\s+"
    rf"(pr|commit|branch){E}|{B}vergiss\s+nicht,?\s+.*\szu\s",
    rf"{B}this\s+time{E}|{B}(desta|dessa|esta)\s+vez{E}|{B}por\s+(ahora|enquanto|agora){E}|{B}cette\s+fois{E}|"
    rf"{B}pour\s+cette\s+r[ée]ponse{E}|{B}(diesmal|dieses\s+mal){E}",
    r"(今回(の.{0,12})?だけ|今回は|今回の|이번만|이번에는|이번\s*답변|这个回答|這個回答|这一次|這一次)",
    r"(这次|這次|就这一次|就這一次|只此一次|这个PR|這個PR|仅此|僅此)",
    r"(今回だけ|この回答だけ|この返事だけ|一回だけ|このPR|のを忘れないで)",
    r"(이번\s*(한\s*번|답변|PR|만|커밋)|이번에만|거\s*잊지\s*마)",
)
# Something happening right now: "Tests are running", "今ビルド中です", "지금 빌드 중입니다" (a classifier feature).
STATUS = _rx(
    rf"{B}(is|are|am)\s+(still\s+)?(running|building|compiling|deploying|pulling|installing|waiting|loading){E}",
    rf"{B}(still\s+waiting|in\s+progress|just\s+(finished|failed|passed|started)|finished\s+a\s+minute\s+ago){E}",
    rf"{B}(está|estão|están|estoy|estou)\s+(rodando|compilando|esperando|executando|ejecutando|corriendo|"
    rf"instalando){E}|{B}acaba(m)?\s+de{E}|{B}en\s+(cours|train\s+de){E}",
    rf"{B}(läuft|laufen)\s+(gerade|noch){E}|{B}gerade\s+(durchgelaufen|fertig){E}",
    r"(正在|进行中|進行中|刚刚|剛剛|(ビルド|テスト|実行|デプロイ|コンパイル|インストール)中です|終わりました|중입니다|중이에요|방금)",
)
# "Prefer X over Y", "bevorzuge", "优先" (a classifier feature: a standing preference without "I").
PREFER = _rx(
    r"^(please\s+)?(always\s+)?(prefer|favou?r)\s",
    r"^(por\s+favor,?\s+|s'il\s+te\s+pla[iî]t,?\s+|bitte\s+)?(prefira|prefiera|prefiere|préfère|préférez|privilégie|"
    r"bevorzuge)\s",
    r"^(请|請)?(优先|優先)|を優先(して|する)|선호해|선호합니다|우선(해|하세요|해\s*주세요)",
)
# How to address the user: tutoiement, duzen, "call me ...", keigo / banmal (a classifier feature).
ADDRESS = _rx(
    rf"{B}(call\s+me(?!\s+(when|if|after|back|later|tomorrow|at|once|as\s+soon|on|in)){E}|address\s+me|tutoie|tutoyer|tutoyez|vouvoyez|"
    rf"tutoiement|vouvoie|vouvoyer|vouvoiement|tutéame|tutear|trátame|tuteia|me\s+chame\s+de|me\s+chama\s+de|"
    rf"me\s+chamar\s+de|llamarme|m'appeler|mich\s+\w+\s+nennen|"
    rf"llámame\s+(?!cuando|si|después|luego|mañana|en)\w+|appelle-moi\s+(?!quand|si|après|dès|demain|à)\w+|duz|duzen|"
    rf"siez|siezen|nenn\s+mich|sprich\s+mich\s+(bitte\s+)?mit\s+(sie|du)\s+an|sprechen\s+sie\s+mich\s+(bitte\s+)?mit\s+(sie|du)\s+an){E}",
    r"((?<!一声)(?<!一聲)叫我(?!一声|一聲)|称呼我|稱呼我|敬語|タメ口|って呼んで|と呼んで|존댓말|반말|(이)?라고\s*불러|"
    r"부를\s*때|님이라고\s*(해|불러))",
)
# Someone's role: the lead, owns, in charge of, 担当, 负责, 담당 (a classifier feature: facts about people).
ROLE = _rx(
    rf"{B}(is\s+(our|the)\s+\w*\s*(lead|owner|manager|head|contact|responsible)|owns|leads|in\s+charge\s+of|"
    rf"responsável|responsable|cuida\s+d|se\s+encarga|s'occupe|leitet|zuständig|verantwortlich|jefe|jefa|chef|"
    rf"g[èe]re|g[èe]rent|kümmert\s+sich|handles|person\s+to\s+ask|quien\s+(aprueba|tiene|lleva)"
    rf"|precisa\s+aprovar){E}",
    r"(负责|負責|担当|リード|責任者|담당|리드|책임자|매니저|都找|問い合わせは|문의는)",
)
# A plan with a date: next month, at the end of the year, shut down, from ... on (a classifier feature).
PLAN = _rx(
    rf"{B}(next\s+(month|quarter|week|year|sprint|release)|end\s+of\s+(the\s+)?(year|month|quarter|march|june)|"
    rf"will\s+be\s+(shut\s+down|retired|removed|deprecated|sunset)|from\s+next|starting\s+next){E}",
    rf"{B}(mês\s+que\s+vem|próximo\s+mês|fim\s+do\s+ano|mes\s+que\s+viene|próximo\s+mes|finales\s+de|fin\s+de\s+año|"
    rf"mois\s+prochain|fin\s+de\s+l'année|ab\s+nächste[mn]|nächste[nm]?\s+monat|ende\s+des\s+jahres|abgeschaltet|"
    rf"desligad[oa]|apagará|coupée?|eingestellt){E}",
    r"(下个月|下個月|年底|下线|下線|停用|来月|年末|廃止|打ち切|終了します|다음\s*달|연말|종료합니다|중단합니다)",
)
# Someone's own setup: what they use or work with, where their systems run ("I work on Fedora with Emacs", "Our
# Postgres is stuck on 12", "Uso Windows 11 con WSL2", "저는 우분투에서 Neovim 써요") (a classifier feature).
SETUP = _rx(
    rf"{B}(i|we)\s+(use|work\s+(on|with|in)|develop\s+on|code\s+(on|in)){E}|{B}(still\s+)?(runs?|is\s+hosted|is\s+deployed)"
    rf"\s+on{E}|{B}(is|are)\s+(still\s+)?stuck\s+on{E}",
    rf"^(eu\s+|yo\s+)?(uso|usamos|utilizo|utilizamos|trabalho\s+com|trabalhamos\s+com|trabajo\s+con|trabajamos\s+con)"
    rf"{E}|{B}(roda|rodam)\s+(ainda\s+)?(em|no|na|sobre){E}|{B}(sigue|corre|corren|est[áa]\s+alojad[oa])\s+"
    rf"(todavía\s+|aún\s+)?(en|sobre){E}",
    rf"^(j'utilise|nous\s+utilisons|on\s+utilise|je\s+travaille\s+(sous|avec|sur)|je\s+d[ée]veloppe\s+(sous|sur))"
    rf"|{B}tourne\s+(encore\s+|toujours\s+)?(sous|sur){E}",
    rf"^(ich|wir)\s+(nutze|nutzen|verwende|verwenden|benutze|benutzen|arbeite|arbeiten)\s+(mit|unter|auf)?"
    rf"|{B}l[äa]uft\s+(noch\s+|immer\s+noch\s+)?(auf|unter){E}",
    r"((我|我们|我們)(平时|平常|一直|现在|現在|都)?(用|使用|在用)|跑在|部署在|运行在|運行在|托管在)",
    r"(で動いて|で動かして|を使っています|を使ってます|使っています|で開発しています|で開発してます)",
    r"((저는|나는|우리는|우리\s*팀은).*(써요|씁니다|사용해요|사용합니다|쓰고\s*있)|에서\s*(돌아가|운영)|에서.{1,20}써요)",
)
TEXT_FEATURES = {
    "deixis": DEIXIS,
    "habit": HABIT,
    "task": TASK_START,
    "people": PEOPLE,
    "style": STYLE,
    "hedge": HEDGE,
    "knowledge": KNOWLEDGE,
    "once": ONCE,
    "status": STATUS,
    "prefer": PREFER,
    "address": ADDRESS,
    "role": ROLE,
    "plan": PLAN,
    "setup": SETUP,
}


# Public products, companies and people everyone knows: a statement about them without anyone's own world (no
# "we", "my", "our team") is general knowledge, and the feature `public` marks it. The role, plan, prefer and
# address features do not count on such a statement ("Linus Torvalds leads ...", "Windows 10 ... eingestellt").
PUBLIC = _rx(
    rf"{B}(apple|google|microsoft|amazon|meta|facebook|mozilla|oracle|ibm|intel|nvidia|netflix|openai|sun\s+microsystems|"
    rf"netscape|red\s+hat|canonical|windows(\s+\d+)?|macos|ios|android|iphone|ipad|linux(\s+kernel)?|"
    rf"kernel\s+do\s+linux|noyau\s+linux|linux-kernels?|chrome|firefox|safari|internet\s+explorer|"
    rf"linus\s+torvalds|guido\s+van\s+rossum|dennis\s+ritchie|ken\s+thompson|bjarne\s+stroustrup|james\s+gosling|"
    rf"brendan\s+eich|tim\s+berners-lee|bill\s+gates|steve\s+jobs|tim\s+cook|satya\s+nadella|sundar\s+pichai|"
    rf"elon\s+musk|mark\s+zuckerberg|jeff\s+bezos|sam\s+altman|jensen\s+huang|the\s+python\s+team|style\s+guides|"
    rf"most\s+(teams|developers|people|companies)|la\s+plupart\s+des|la\s+mayoría\s+de|a\s+maioria\s+d|die\s+meisten){E}",
    r"(林纳斯|林納斯|托瓦兹|托瓦茲|吉多|苹果|蘋果|谷歌|微软|微軟|亚马逊|亞馬遜|リーナス|トーバルズ|グイド|アップル|"
    r"グーグル|マイクロソフト|アマゾン|리누스|토르발스|귀도|애플|구글|마이크로소프트|아마존|윈도우|ウィンドウズ)",
)
GATED = {"prefer", "address", "role", "plan"}


# Someone's own product or plan, though no pronoun says so ("The mobile app will drop Android 8", "Vamos ...").
OWN = _rx(
    rf"{B}(the|o|a|die|das|la|le|el)\s+(mobile\s+)?(app|aplicativo|aplicación|application|release){E}",
    r"^(vamos|hemos|dejamos|uso|usamos|schreib|write|use)\s",
)


def _public(text: str) -> bool:
    return (
        bool(PUBLIC.search(text))
        and not PEOPLE.search(text)
        and not OWN.search(text)
        and not SETUP.search(text)
        and not DECISION.search(text)
    )


def _short(text: str) -> bool:
    if has_cjk(text):
        return len(re.sub(r"\s", "", text)) <= 16
    return len(text.split()) <= 7


def text_features(text: str, names: tuple[str, ...] | list[str]) -> list[float]:
    """The classifier's features beside the vector, by name (1.0 when present): `deixis` (about the task at
    hand), `habit` (a standing-rule marker), `task` (a task verb on a definite object first), `people` (someone's
    own world), `style` (what an assistant produces: answers, commit messages, names ...), `hedge` (a guess),
    `knowledge` (general knowledge about public things), `once` (a one-off scope), `status` (happening now),
    `prefer` ("Prefer X over Y"), `address` (how to address the user), `role` (someone's role), `plan` (a dated
    plan), `public` (about public products or people, without anyone's own world)."""
    public = _public(text)
    values = []
    for name in names:
        if name == "public":
            values.append(1.0 if public else 0.0)
        elif name == "terse":  # a short style rule without a verb of the moment ("Short answers, please.")
            values.append(1.0 if STYLE.search(text) and _short(text) else 0.0)
        elif name in GATED and public:
            values.append(0.0)
        else:
            values.append(1.0 if TEXT_FEATURES[name].search(text) else 0.0)
    return values


QUESTION_START = _rx(
    r"^(what|which|who|whom|whose|when|where|why|how|do|does|did|can|could|would|should|is|are|was|were|will|"
    r"have|has|shall|may)\s",
    r"^(o\s+que|qual|quais|quem|quando|onde|por\s+que|como|você|voce)\s",
    r"^(qué|que|cuál|cual|quién|quien|cuándo|dónde|donde|por\s+qué|cómo|como|puedes|podrías)\s",
    r"^(qu'est-ce|quel|quelle|quels|qui|quand|où|pourquoi|comment|est-ce\s+que|peux-tu|pourrais-tu)\s",
    r"^(was|welche|welcher|wer|wann|wo|warum|wie|kannst\s+du|könntest\s+du|hast\s+du|ist|sind)\s",
)
# laughter or "just kidding" marks a joke, not a memory ("I'm allergic to meetings lol", "jaja qué bueno")
JOKING = re.compile(
    r"(?i)(?<!\w)(?:lol|lmao|rofl|ha(?:ha)+|he(?:he)+|jk|just\s+kidding|mdr|ja(?:ja)+|k{4,})(?!\w)|[😂🤣😆]|ㅋㅋ|ㅎㅎ|哈哈"
)
QUESTION_END = re.compile(r"[?？]\s*$|(吗|嗎|呢)[。]?\s*$|(ですか|ますか|か[。]?)\s*$|(나요|까요|습니까|어요\?|니)\s*$")
# A question about what the assistant remembers ("do you remember my dog's name?", "你还记得...吗", "覚えてる？",
# "기억나?"): "remember" in it asks, it does not tell.
RECALL_QUESTION = _rx(
    rf"{B}(do|did|can|could|don't)\s+you\s+(still\s+|even\s+)?(remember|recall|know){E}|^(remember|recall)\s+(what|when|"
    rf"where|who|which|how|if|whether){E}|{B}what\s+do\s+you\s+(remember|know)\s+about{E}",
    rf"{B}(te\s+acuerdas|(te\s+)?recuerdas|(você\s+)?(se\s+)?lembra(s)?|tu\s+te\s+souviens|te\s+souviens-tu|"
    rf"tu\s+te\s+rappelles|te\s+rappelles-tu|vous\s+vous\s+souvenez|erinnerst\s+du\s+dich|weißt\s+du\s+noch|"
    rf"kennst\s+du\s+noch){E}",
    r"(你|您)?(还|還)?(记得|記得|记住了|記住了)\S*(吗|嗎|没有|沒有|么|麼|[?？])",
    r"(覚えて(る|いる|ます|いますか)|覚えてる)(\S{0,6})?(か|[?？])|기억(나|나요|나니|해|하니|하나요|하세요|하고\s*있어)\s*\S{0,4}[?？]",
)
HYPOTHETICAL = _rx(
    r"^(if|suppose|imagine|what\s+if|hypothetically|se|si|wenn|falls|假如|如果|もし|만약)\s",
    rf"{B}(a\s+user|the\s+user|users|someone|people)\s+(said|says|prefers|wrote|might){E}",
    rf"{B}(my\s+)?(character|story|novel|protagonist|fictional){E}",
)
# A standing conditional rule ("If billing breaks, page Okonkwo", "When I paste a trace, explain the cause
# first", "Si te pido un resumen, siempre en español") is an instruction to keep, not a hypothetical: its main
# clause (after the first comma; without one, the whole text, where only unanchored cues count) is an order,
# "always"/"never", someone who takes over or a duty (DUTY), and nothing in it is unreal ("would", "were",
# "maybe"; the other languages' conditional and subjunctive forms) or about the case at hand ("that fails",
# "this request", "for now": DEIXIS).
CONDITION = _rx(
    r"^(if|when|whenever|every\s+time|in\s+case|wenn|falls|immer\s+wenn|si|cuando|quand|lorsque|se|quando)\s"
)
# Orders in es, pt, fr, de (tú / você / tu / vous / du / Sie forms), for a standing conditional's main clause and
# for an order carrying "always" or "as a rule".
_ORDER_OTHER = (
    r"(usa|utiliza|escribe|responde|contesta|pon|incluye|evita|añade|agrega|ejecuta|corre|revisa|céntrate|"
    r"enfócate|empieza|comienza|explica|dame|dime|haz|manda|avisa|avísame|llama|llámame|sigue|mantén|deja|"
    r"prioriza|escríbeme|mándame|"
    r"use|utilize|escreve|escreva|responda|coloca|coloque|põe|ponha|inclui|inclua|evite|adiciona|adicione|roda|"
    r"rode|executa|execute|revise|foca|foque|concentra-te|foca-te|começa|comece|explique|faz|faça|mande|avise|"
    r"liga|ligue|chama|chame|segue|siga|mantém|mantenha|deixa|deixe|priorize|me\s+avisa|me\s+avise|me\s+manda|"
    r"me\s+mande|"
    r"utilise|utilisez|écris|écrivez|réponds|répondez|mets|mettez|inclus|incluez|évite|évitez|ajoute|ajoutez|"
    r"lance|lancez|exécute|exécutez|vérifie|vérifiez|concentre-toi|concentrez-vous|commence|commencez|explique|"
    r"expliquez|donne-moi|donnez-moi|dis-moi|dites-moi|fais|faites|envoie|envoyez|préviens|prévenez|appelle|"
    r"appelez|garde|gardez|privilégie|privilégiez|"
    r"nutze|verwende|benutze|schreib|schreibe|antworte|setze|füge|vermeide|führe|prüfe|konzentrier\s+dich|"
    r"beginne|erkläre|gib|sag|mach|schick|ruf|behalte|informiere|antworten\s+sie|schreiben\s+sie|verwenden\s+sie|"
    r"nutzen\s+sie|benutzen\s+sie|sprechen\s+sie|erklären\s+sie)"
)
_ORDER = (
    r"(page|call|ping|e-?mail|text|message|tell|ask|use|write|keep|send|notify|escalate|check|run|put|add|skip|"
    r"stop|explain|answer|reply|respond|show|give|format|mention|remind|wake|contact|reach\s+out|open|file|log|"
    r"assume|default\s+to|go\s+with|avoid|leave|include|cc|loop\s+in|make\s+sure|double-check|switch\s+to|say|"
    r"wait|hold|talk\s+to|mark|flag|ignore|pause|rerun|re-run|fall\s+back|let\s+me\s+know|uppercase|lowercase|"
    r"capitali[sz]e|prefix|name|sort|indent|wrap|quote|comment|document|annotate|focus\s+on|lead\s+with|start\s+with|"
    r"cite|link|translate)"
)
# who is on duty or what must happen: the rule holds without an order ("Dana is first on call", "it needs
# sign-off from Priya", "hay que avisar a Lucía", "il faut prévenir Mathieu", "ist Jonas zuständig")
DUTY = (
    rf"{B}(on\s+call|in\s+charge|responsible|backup|needs?|must|has\s+to|have\s+to|zuständig|verantwortlich|"
    rf"muss|müssen|responsable|encargad[oa]|hay\s+que|il\s+faut|de\s+garde|responsável|tem\s+que|atende){E}"
)
STANDING_MAIN = _rx(
    rf"^(please\s+|just\s+|always\s+|never\s+|don't\s+|do\s+not\s+|first\s+)*{_ORDER}{E}",
    rf"^(always|never|don't|do\s+not){E}",
    rf"^[A-Z][a-z]+\s+(handles|owns|takes\s+over|covers|is\s+on\s+call|signs\s+off|approves|decides){E}",
    rf"{B}(immer|nie|niemals|bitte|siempre|nunca|por\s+favor|toujours|jamais|sempre){E}",
    DUTY,
    # es, pt, fr, de orders; a team's own procedure ("we roll back with ...")
    rf"^(primero\s+|primeiro\s+|d'abord\s+|zuerst\s+|por\s+favor,?\s+|bitte\s+)?{_ORDER_OTHER}{E}",
    rf"^(we|the\s+team)\s+(always\s+)?(roll\s+back|revert|restore|redeploy|rerun|re-run|restart|fail\s+over|page|"
    rf"notify|escalate|use|run|call|open|file|switch){E}",
)
UNREAL = _rx(
    rf"{B}(would|could|might|were|had|ever|maybe|perhaps|probably|i'd|we'd|you'd){E}",
    rf"{B}otherwise\s+\w",  # "…; otherwise try the other flag" (an alternative), not "unless I say otherwise"
    rf"{B}(würde\w*|wäre\w*|hätte\w*|könnte\w*|vielleicht|eventuell){E}",
    rf"{B}(quizás|quizá|tal\s+vez|peut-être|talvez){E}",
)
# conditional / past subjunctive forms in es, fr, pt, each read only after that language's "if" / "when" (in
# English text they would match "Maria", "wait"; French "dépasse" ends like a Portuguese subjunctive)
ROMANCE_UNREAL = (
    (_rx(r"^(si|cuando)\s"), re.compile(r"\w(ría|rían|ríamos|iera|ieras|iéramos|áramos|iese)(?!\w)", re.I)),
    (_rx(r"^(si|quand|lorsque)\s"), _rx(r"\w(rait|raient|rions)(?!\w)", rf"{B}(avait|avaient|était|étaient){E}")),
    (_rx(r"^(se|quando)\s"), re.compile(r"\w(ria|riam|sse|ssem|ssemos)(?!\w)", re.I)),
)


# Standing statements without a cue word ("always", "I prefer", "remember"): who does what, how the team does
# things, how the user wants answers and code, a plan for one's own product, one's own machines and schedules.
# Each kind is read only in the words that make it standing (a plural "answers", a bare "test files", a
# recurring "nightly"), never on a one-off request about the task at hand (DEIXIS), a temporary state (TEMPORARY:
# "for now", "this week", "while ... is out") or a repeat ("again"), and never on public products or people.
_NAME = (
    r"(?!(?:this|that|it|he|she|they|we|you|nobody|everyone|everybody|someone|somebody|who|which|what|the|our|my|"
    r"your|there|here|one|each|all|none|no|it's|that's)\b)(?-i:[A-ZÀ-Ý])[\w'-]+(\s+(?-i:[A-ZÀ-Ý])[\w'-]+)?"
)
_ROLE_NOUN = (
    r"(lead|leader|owner|maintainer|manager|designer|architect|admin|administrator|pm|product\s+manager|"
    r"product\s+owner|engineer|developer|dba|sre|contact|point\s+of\s+contact|go-to\s+person|deputy|cto|ceo|cfo|"
    r"coo|vp|director|head\s+of\s+[\w-]+|scrum\s+master|reviewer|approver|tester|qa)"
)
# what a person runs or owns at work (not "runs the marathon", "handles the encoding")
_DUTY_OBJECT = (
    r"(cluster|clusters|service|services|team|releases?|pipelines?|infra|infrastructure|backend|frontend|api|apis|"
    r"database|databases|db|servers?|deploys|deployments|on-call|rotation|budget|roadmap|project|repo|repos|modules?|"
    r"integrations?|migrations|app|apps|website|docs|documentation|billing|payments|onboarding|hiring|support|ops|qa|"
    r"security|design|platform|product|accounts?|contracts?|vendors?|process|reviews|partnerships?|sdk|cli|stack)"
)
# software that "runs" or "handles" things, read as no one's role
_TOOL = _rx(
    rf"^(python|django|flask|redis|postgres(ql)?|mysql|sqlite|mongodb|kafka|nginx|apache|docker|kubernetes|k8s|"
    rf"terraform|ansible|jenkins|celery|airflow|react|node|rust|go|java|spark|rails|laravel|webpack|vite|git|github|"
    rf"gitlab|cron|systemd|sentry|grafana|prometheus|elasticsearch|npm|yarn|cargo|aws|gcp|azure|cloudflare|vercel|"
    rf"heroku){E}"
)
# platforms people build for: naming one does not make a role or a setup general knowledge ("Tom handles the iOS
# releases", "O Rafael é o responsável pelo app Android"); a plan naming one stays public ("Windows 10 wird ...")
_PLATFORM = _rx(rf"{B}(ios|android|windows|macos|linux|iphone|ipad|chrome|firefox|safari){E}")
ROLE_STATEMENT = _rx(
    # "Priya is our new designer", "he's the ETL lead", "Marco is the contact for billing"
    rf"(^|,\s*|;\s*|{B}and\s+)({_NAME}|he|she|they)(\s+is|'s|\s+are|'re)\s+(our|the|my)\s+(new\s+)?([\w/-]+\s+){{0,3}}?"
    rf"{_ROLE_NOUN}(?=\s*([,.;:!)—-]|$|\s+(for|of|on|in|at|and|so|who|since|here|there){E}))",
    # "Ravi runs the Kafka cluster", "Mara owns the billing service"
    rf"^{_NAME}\s+(runs|handles|owns|leads|maintains|manages|looks\s+after|takes\s+care\s+of|is\s+in\s+charge\s+of|"
    rf"is\s+responsible\s+for)\s+(the|our|all|every)\s+([\w/-]+\s+){{0,3}}{_DUTY_OBJECT}{E}",
    # "approvals for the mobile app go to her deputy"
    rf"{B}(approvals?|sign-?offs?|reviews|code\s+reviews|escalations|questions|requests|invoices|expense\s+reports|"
    rf"pages|alerts)(\s+[\w-]+){{0,6}}\s+(go|goes)\s+to\s+(him|her|them|his|their|the|our|{_NAME}){E}",
    rf"^((o|a)\s+)?{_NAME}\s+(é\s+(o|a)\s+(nov[oa]\s+)?(responsável|líder|dono|dona|gerente|designer|arquitet[oa]|"
    rf"mantenedor[a]?|contato|ponto\s+focal)|cuida\s+(d[oa]s?|de)|lidera|gerencia|mantém){E}",
    rf"^{_NAME}\s+(es\s+(el|la|nuestr[oa])\s+(nuev[oa]\s+)?(responsable|líder|jefe|jefa|dueñ[oa]|diseñador[a]?|"
    rf"arquitect[oa]|contacto|encargad[oa])|se\s+encarga\s+de|lidera|gestiona|mantiene){E}",
    rf"^{_NAME}\s+(est\s+(le|la|notre)\s+(nouveau\s+|nouvelle\s+)?(responsable|lead|chef|designer|architecte|"
    rf"mainteneur|mainteneuse|contact|référent|référente)|s'occupe\s+(du|de|des|d'\w+)|gère|pilote|maintient){E}",
    rf"^{_NAME}\s+(ist\s+(unser|unsere|der|die)\s+(neue[r]?\s+)?[\w-]*(lead|leiter|leiterin|designer|designerin|"
    rf"architekt|architektin|ansprechpartner|ansprechpartnerin|maintainer|verantwortliche[r]?|admin|chef|chefin)|"
    rf"ist\s+für\s+.{{1,50}}\s+zuständig|kümmert\s+sich\s+um|betreut|leitet|verantwortet){E}",
    r"^\S{1,6}是(我们的|我們的|团队的|團隊的)?(新来的|新來的|新的)?\S{0,8}(产品经理|產品經理|项目经理|項目經理|经理|經理|"
    r"负责人|負責人|设计师|設計師|架构师|架構師|维护者|維護者|主管|组长|組長)",
    r"^\S{1,6}(负责|負責)(我们的|我們的)?\S{2,15}",
    r"さん(が|は)\S{0,20}(担当|責任者|リード|メンテナ|マネージャー|デザイナー)(です|をしています|者です)",
    r"(を担当しています|の担当です|が担当です|の責任者です)",
    r"(님이|님은|씨가|씨는)\s*.{0,25}(메인테이너|담당자|리드|책임자|매니저|디자이너|팀장)",
    r"(을|를)\s*(담당하고\s*있|담당합니다|담당해요|맡고\s*있)",
    # who approves, signs off or decides, said casually: "quem aprova reembolso acima de 500 reais é a Sônia",
    # "whoever signs off on refunds is Dana", "c'est Mathieu qui valide les congés", "合同审批要先过法务的陈律师",
    # "経費の承認は全部田中さん経由です", "휴가 승인은 김 팀장님이 해요"
    rf"^(whoever|the\s+(person|one|guy|woman|man)\s+who)\s+(approves|signs\s+off\s+on|signs|decides\s+on|"
    rf"reviews|handles|owns|validates)\s+(?!(this|that|it|these|those){E}).{{1,60}}\s+is\s+{_NAME}",
    rf"^quem\s+(aprova|assina|decide|valida|revisa|autoriza|cuida\s+d[eoa]s?|responde\s+por)\s+"
    rf"(?!(isso|isto|esse|essa|este|esta){E}).{{1,60}}\s+é\s+(o\s+|a\s+)?{_NAME}",
    rf"^quien\s+(aprueba|firma|decide|valida|revisa|autoriza|lleva|se\s+encarga\s+de)\s+"
    rf"(?!(esto|eso|este|esta|ese|esa){E}).{{1,60}}\s+es\s+(el\s+|la\s+)?{_NAME}",
    rf"^c'est\s+{_NAME}\s+qui\s+(valide|approuve|signe|décide|autorise|gère|s'occupe)\s+(?!(ça|cela|ceci){E})",
    rf"^(celui|celle)\s+qui\s+(valide|approuve|signe|décide|autorise)\s+.{{1,60}},?\s+c'est\s+{_NAME}",
    rf"^wer\s+.{{1,60}}\s+(genehmigt|freigibt|abzeichnet|entscheidet|unterschreibt),?\s+ist\s+{_NAME}",
    rf"{B}(approvals?|sign-?offs?|refunds|expenses|expense\s+reports|contracts|invoices|purchases|vacation\s+requests|"
    rf"time\s+off|hires|hiring)(\s+[\w-]+){{0,6}}\s+(go|goes|run|runs|have\s+to\s+go|must\s+go|need\s+to\s+go)\s+"
    rf"through\s+{_NAME}",
    rf"{B}(aprovaç(ão|ões)|reembolsos?|contratos?|despesas|compras|férias|notas?\s+fiscais)(\s+[\w-]+){{0,6}}\s+"
    rf"(passa|passam|tem\s+que\s+passar|têm\s+que\s+passar|precisa(m)?\s+passar)\s+pel[oa]\s+{_NAME}",
    rf"{B}(aprobaciones|reembolsos?|contratos?|gastos|compras|vacaciones|facturas)(\s+[\w-]+){{0,6}}\s+"
    rf"(pasa|pasan|tienen\s+que\s+pasar|tiene\s+que\s+pasar)\s+por\s+{_NAME}",
    r"(审批|審批|报销|報銷|签字|簽字|合同)\S{0,6}(要|都要|必须|必須|得)?(先)?(过|過|经过|經過|找|由)\S{0,8}的?"
    r"(?-i:[\u4e00-\u9fff]{1,3})(律师|律師|经理|經理|总|總|老师|老師|主管|负责人|負責人)",
    r"(承認|決裁|稟議|精算)は\S{0,6}\S{1,8}さん(経由|が(担当|行|し|やり)|に(回|出)|の(承認|決裁))",
    r"^\S{1,8}さんは\S{0,12}(部長|課長|社長|室長|マネージャー|リーダー|責任者|担当)(で|です)",
    r"(승인|결재|정산)(은|는)\s*\S{1,10}\s*(님|씨|팀장님|팀장|부장님)(이|가)?\s*(해요|합니다|담당|맡아|거쳐)",
    # a fact about someone else the way PERSON takes one about the user: "Lena is allergic to shellfish"
    rf"^{_NAME}\s+(is|'s)\s+(allergic|vegetarian|vegan|lactose[\s-]intolerant|diabetic|colou?r-?blind|left-handed){E}",
)
_ORDER_EN = (
    r"(use|write|keep|run|check|put|add|answer|reply|respond|format|name|explain|show|give|include|avoid|skip|"
    r"start|end|test|document|comment|sort|indent|wrap|quote|prefix|mark|tag|sign|cite|link|lint|rebase|squash|"
    r"push|commit|deploy|pin|label|mention|ask|ping|call|cc)"
)
_ALWAYS = (
    r"(always|never(?!\s+mind)|every\s+time|as\s+a\s+rule|by\s+default|siempre|nunca|jamás|sempre|toujours|jamais|"
    r"immer|nie|niemals|grundsätzlich|generell|standardmäßig|por\s+defecto|por\s+padrão|par\s+défaut|em\s+geral|"
    r"por\s+regla\s+general|en\s+règle\s+générale)"
)
_OPENING = r"^(please\s+|por\s+favor,?\s+|s'il\s+te\s+pla[iî]t,?\s+|s'il\s+vous\s+pla[iî]t,?\s+|bitte\s+)?"
_STYLE_PLURAL = (
    r"(answers|replies|responses|explanations|summaries|commit\s+messages|commits|comments|docstrings|"
    r"variable\s+names|function\s+names|respuestas|explicaciones|resúmenes|comentarios|respostas|explicações|"
    r"resumos|comentários|réponses|explications|résumés|commentaires|messages\s+de\s+commit|antworten|"
    r"erklärungen|zusammenfassungen|kommentare|commit-nachrichten|commit-messages)"
)
_LANGUAGE = (
    r"(english|englisch|inglés|inglês|anglais|german|deutsch|alemán|alemão|allemand|spanish|español|espanhol|"
    r"espagnol|spanisch|portuguese|portugués|português|portugais|portugiesisch|french|francés|francês|français|"
    r"französisch)"
)
_CONVENTION = (
    r"(quotes|double\s+quotes|single\s+quotes|semicolons|tabs|spaces|indentation|type\s+hints|f-strings|trailing\s+"
    r"commas|comillas(\s+dobles|\s+simples)?|punto\s+y\s+coma|tabulaciones|espacios|sangría|aspas(\s+duplas|\s+"
    r"simples)?|ponto\s+e\s+vírgula|indentação|guillemets(\s+doubles|\s+simples)?|points-virgules|tabulations|"
    r"indentation|anführungszeichen|semikolons|tabs|einrückung|typannotationen|type-hints)"
)
_CODE_LANGUAGE = (
    r"(javascript|typescript|python|go|golang|rust|java|kotlin|swift|ruby|php|sql|bash|shell|yaml|json|css|html|"
    r"react|vue|django|c\+\+|c#)"
)
STYLE_ORDER = _rx(
    # an order carrying "always" / "as a rule", in the order's own clause or right after a comma ("use tabs,
    # never spaces"; not "run them again, they always fail")
    rf"{_OPENING}({_ORDER_OTHER}|{_ORDER_EN}){E}[^,;]*{B}{_ALWAYS}{E}",
    rf"{_OPENING}({_ORDER_OTHER}|{_ORDER_EN}){E}[^;]*,\s*{_ALWAYS}{E}",
    rf"^(siempre|nunca|sempre|toujours|jamais|immer|nie|niemals)\s+(me\s+|te\s+|mir\s+|moi\s+)?{_ORDER_OTHER}{E}",
    # "Always squash commits before merging" (a work verb, not "always happy to help", "never stop learning")
    rf"{_OPENING}(always|never)\s+({_ORDER_EN}|squash|rebase|bump|review|merge|pull|fetch|back\s+up|verify|validate|"
    rf"escape|sanitize|close|log|annotate|confirm|double-check|hard-code|hardcode|force-push|delete|drop|mock|"
    rf"catch|print|store|expose|disable|bypass|touch|edit|modify|reformat|vendor|upgrade|downgrade){E}",
    rf"^(nunca|jamás)\s+(uses|escribas|pongas|hagas|respondas|añadas|dejes|subas|mezcles|incluyas|ejecutes|cambies|"
    rf"borres|hagas\s+push|hagas\s+commit){E}|^(ne\s+|n')(utilise|ajoute|mets|fais|écris|pousse|réponds|commite|supprime|modifie|touche|"
    rf"désactive|expose|stocke)\s+jamais{E}",
    # a negative standing order with its own verb ("nunca sugira push direto na main", "never suggest force-push",
    # "ne propose jamais de ...", "schlag nie ... vor", "永远不要建议...", "絶対に ... 提案しないで",
    # "절대 ... 추천하지 마")
    rf"^(nunca|jamais)\s+(me\s+)?(sugira|sugere|recomende|recomenda|proponha|use|usa|faça|faz|coloque|escreva|mande|rode|"
    rf"suba|mexa|apague|commite|responda|invente|mencione|dê|deixe|empurre|force){E}(?!\s+(isso|isto|aquilo|ele|ela){E})",
    rf"^n[ãa]o\s+(me\s+)?(sugira|recomende|proponha|use|faça|coloque|escreva|mande|rode|suba|mexa|apague|commite|"
    rf"invente)(\s+.{{1,60}})?\s+nunca{E}",
    rf"^(nunca|jamás)\s+(me\s+)?(sugieras|recomiendes|propongas|menciones|toques|borres|inventes|fuerces)\s"
    rf"(?!(eso|esto|aquello|lo\s+mismo){E})",
    rf"^(ne\s+|n')(me\s+)?(suggère|propose|recommande|conseille|mentionne|invente|force)\s+jamais{E}"
    rf"(?!\s+(ça|cela|ceci|ce\s+truc){E})",
    rf"^(schlag|schlage)\s+(mir\s+)?(nie|niemals|nie\s+wieder)\s+(?!(das|dies|so\s+was|sowas){E}).{{1,60}}\s+vor{E}",
    rf"^never\s+(suggest|recommend|propose|push|force-push|commit|mention|invent|promise|assume){E}"
    rf"(?!\s+(that|this|it|those|these){E})",
    r"^(永远|永遠|绝对|絕對|千万|千萬|从来|從來)?(不要|别|別)(再)?(建议|建議|推荐|推薦|提议|提議)\S{1,30}",
    r"^(絶対に?|決して)\S{0,30}(提案|推奨|おすすめ|使用|使わ|書か|プッシュ)(しないで|ないで|しないこと)",
    r"^절대\s*.{0,30}(추천하지|제안하지|권하지|쓰지|사용하지|푸시하지)\s*(마|마세요|말아\s*주세요)",
    # a short rule for what the assistant writes: "Kurze Antworten, bitte", "Explications courtes, merci"
    rf"{_OPENING}((short|shorter|brief|concise|terse|kurze|kürzere|knappe|courtes|brèves|concises|cortas|breves|"
    rf"concisas|curtas|objetivas)\s+{_STYLE_PLURAL}|{_STYLE_PLURAL}\s+(courtes|brèves|concises|cortas|breves|"
    rf"concisas|curtas|objetivas|(bitte\s+)?kurz))(,?\s*(please|bitte|merci|por\s+favor|s'il\s+te\s+pla[iî]t|s'il\s+vous\s+"
    rf"pla[iî]t|obrigad[oa]|gracias|thanks))?\s*[.!]?\s*$",
    # what the assistant writes, in a language: "Escreva os commits em inglês"
    rf"{B}{_STYLE_PLURAL}(\s+[\w-]+){{0,4}}\s+(in|em|en|auf|na|no)\s+{_LANGUAGE}{E}",
    # a code convention for a language: "Usa comillas dobles en el código JavaScript"
    rf"{_OPENING}({_ORDER_OTHER}|{_ORDER_EN}|no|sin|sem|pas\s+de|keine)\s+(\w+\s+)?{_CONVENTION}\s.{{0,30}}{B}"
    rf"{_CODE_LANGUAGE}{E}",
    # a rule for a kind of thing, bare plural: "Name test files after the module", "Keep functions under 50 lines"
    rf"{_OPENING}(name|keep|put|write|place|prefix|suffix|group|split|mark|tag)\s+(?!the\s|this\s|that\s|these\s|"
    rf"those\s|my\s|a\s|an\s)([\w-]+\s+)?(files|tests|functions|modules|classes|methods|branches|variables|constants|"
    rf"migrations|commits|comments|docstrings|imports|helpers|fixtures|tables|columns|endpoints|routes|components)\s+"
    rf"(after|under|below|inside|with|as|short|small|sorted|by|before|in\s+(?!the\s|this\s))",
    rf"^([\w-]+\s+)?(tests|test\s+files|migrations|docs|fixtures|helpers|scripts|configs?)\s+(go|belong|live)\s+"
    rf"(under|in|into|next\s+to){E}",
    # order of what comes first: "Code first, explanation after"
    rf"{B}(the\s+)?(code|command|commands|answer|summary|tl;?dr|conclusion|result)\s+first,?\s+(and\s+|then\s+)?"
    rf"(the\s+)?(explanation|explanations|details|reasoning|context|discussion|background|commentary){E}",
    rf"{_OPENING}(skip|drop|cut|leave\s+out|spare\s+me|no\s+more|no)\s+(the\s+)?(disclaimers|caveats|pleasantries|"
    rf"preambles?|apologies|small\s+talk|fluff|filler){E}",
    rf"{B}explain\s+(things|stuff|everything|concepts)\s+(to\s+me\s+)?(like|as\s+if|as\s+though){E}",
    # zh / ja / ko: "变量名用英文", "回答请用简体中文", "型ヒントは全部の関数につけること",
    # "자바스크립트에서는 세미콜론 쓰지 마세요"
    r"^(回答|回复|回復|解释|解釋|注释|註釋|提交信息|变量名|變量名|函数名|函數名|类名|類名|文件名|日志|日誌)(请|請|都|一律|"
    r"统一|統一|一定|要)?(用|使用|写成|寫成|采用|採用)",
    r"^(回答|回复|回復|解释|解釋)(请|請)?(简短|簡短|简洁|簡潔|精简|精簡)一?(点|點|些)",
    r"(全部|すべて|全て|常に|必ず|毎回).{0,30}(こと|ように)[。]?$",
    r"^(コメント|変数名|関数名|コミットメッセージ|回答|返事)は.{1,15}(で(書いて|お願い)|にして)",
    r"에서는\s*.{1,30}(쓰지\s*마세요|사용하지\s*마세요|써\s*주세요|사용해\s*주세요|붙여\s*주세요)",
    r"^(모든|항상|매번|늘)\s*.{1,30}(주세요|마세요|하세요)[.!]?$",
)
# How a team works: "we roll back with `make rollback-staging`", "to reset the cache run `make flush`", "PRs
# need two approvals before merge" (a procedure needs a command to run; a rule for every PR or deploy).
_COMMAND = (
    rf"(`[^`]+`|{B}(make|npm|yarn|pnpm|cargo|kubectl|docker|git|python|uv|pip|go|helm|terraform|ansible|just)\s+"
    rf"[\w:./-]+|\./[\w./-]+|{B}(bin|scripts)/[\w./-]+)"
)
_PROCESS_EN = (
    r"(deploys?|deployments?|releases?|builds?|rollbacks?|roll-backs?|backups?|tests|test\s+suite|e2e\s+tests|"
    r"migrations?|lint|linting|setup|bootstrap|seed|release\s+process|deploy\s+process|hotfix\s+process)"
)
PROCEDURE = _rx(
    rf"{B}(we|the\s+team)\s+(always\s+)?(roll\s+back|deploy|release|restart|rotate|reset|migrate|restore|redeploy|"
    rf"revert|bump|publish|tag|back\s+up|seed)\b.{{0,40}}\s(with|by\s+running|via|using|through){E}.{{0,4}}{_COMMAND}",
    rf"^(to|para|pour|um)\s+\w+{E}(?!\s+(it|this|that|them|lo|la|isso|isto|ça|cela|es|das){E}).{{0,60}}?,?\s+(run|use|type|execute|call|roda|rode|usa|use|executa|execute|ejecuta|"
    rf"corre|lanza|usa|lance|utilise|exécute|tape|führe|nutze|verwende|starte|tippe)\s.{{0,10}}{_COMMAND}",
    r"^(every|each|all|any)?\s*(prs?|pull\s+requests|merge\s+requests|deploys?|releases?|migrations|hotfixes)\s+"
    r"(need|needs|require|requires|must\s+have|must\s+get|must\s+pass)\s",
    r"(승인|리뷰|테스트)\S{0,3}\s*\S{0,6}(받아야|해야|되어야|돼야|통과해야)\s*(머지|배포|merge|deploy)",
    # one's own process is a command, said casually: "our staging deploy is `make deploy-stg ENV=eu`", "chez nous
    # les tests d'intégration se lancent avec `make itest`", "うちの本番デプロイは `./deploy.sh prod` で実行します"
    rf"{B}(our|my|the\s+team's)\s+([\w-]+\s+){{0,2}}{_PROCESS_EN}\s+(is|are|=|:|is\s+just|runs?\s+(with|via|through)|"
    rf"goes\s+(through|via)|is\s+done\s+(with|via|by)|happens\s+(with|via)|works\s+with)\s+(running\s+)?{_COMMAND}",
    rf"^(chez\s+nous|dans\s+l'équipe|dans\s+notre\s+équipe|nos|notre)\s*,?\s+.{{0,40}}(se\s+lancent|se\s+lance|"
    rf"se\s+fait|se\s+font|passe|passent|tourne|tournent)\s+(avec|via|par)\s+{_COMMAND}",
    rf"^(on|nous)\s+(déploie|déployons|lance|lançons|livre|livrons|migre|migrons|teste|testons|build(e|ons))\s+"
    rf".{{0,30}}(avec|via|par)\s+{_COMMAND}",
    rf"^(nuestr[oa]s?|en\s+el\s+equipo|en\s+la\s+empresa|aquí\s+en\s+la\s+empresa)\s+.{{0,40}}(se\s+hace|se\s+hacen|"
    rf"se\s+lanza|se\s+lanzan|se\s+corre|se\s+corren|se\s+ejecuta|se\s+ejecutan|es|son|va|van)\s+(con\s+|por\s+|"
    rf"vía\s+)?{_COMMAND}",
    rf"^(desplegamos|lanzamos|corremos|ejecutamos|publicamos|migramos)\s+.{{0,30}}(con|vía|usando)\s+{_COMMAND}",
    rf"^(n?[oa]\s+)?(noss[oa]s?|aqui\s+na\s+empresa|no\s+time|na\s+equipe|lá\s+na\s+empresa)\s+.{{0,40}}"
    rf"(é\s+feit[oa]|são\s+feit[oa]s|se\s+faz|roda|rodam|é|são|vai)\s+(com\s+|pelo\s+|via\s+)?{_COMMAND}",
    rf"^(a\s+gente\s+)?(fazemos|rodamos|subimos|publicamos|migramos|faz|roda|sobe)\s+.{{0,30}}(com|via|usando|pelo)\s+"
    rf"{_COMMAND}",
    rf"^(bei\s+uns|im\s+team|unser|unsere|unseren)\s+.{{0,40}}(läuft|laufen|geht|gehen|wird|werden|machen\s+wir|"
    rf"starten\s+wir)\s+(über|mit|per|via)\s+{_COMMAND}",
    rf"^wir\s+(deployen|releasen|starten|migrieren|testen|bauen)\s+.{{0,30}}(mit|über|per|via)\s+{_COMMAND}",
    rf"^bei\s+uns\s+(läuft|laufen|geht|gehen|machen\s+wir|starten\s+wir)\s+.{{1,40}}\s+(über|mit|per|via)\s+{_COMMAND}",
    rf"^(我们|我們|团队|團隊|公司)(的)?\S{{0,10}}(部署|发布|發布|发版|發版|上线|上線|测试|測試|回滚|回滾|备份|備份|构建|構建)"
    rf"\S{{0,4}}(都)?(用|是|靠|跑|执行|執行)\s*{_COMMAND}",
    rf"^(うちの|弊社の|チームの|私たちの)?\S{{0,12}}(デプロイ|リリース|ビルド|テスト|ロールバック|バックアップ|"
    rf"マイグレーション)は\s*{_COMMAND}\s*(で|を)\s*(実行します|実行しています|行います|やります|やっています|"
    rf"回します|叩きます|します)",
    rf"^(우리|저희)\s*\S{{0,12}}\s*(배포|릴리스|빌드|테스트|롤백|백업|마이그레이션)(는|은)\s*{_COMMAND}\s*"
    rf"(로|으로|를|을)\s*(해요|합니다|하고\s*있|돌려요|돌립니다|실행해요|실행합니다)",
)
# A plan for one's own product ("On abandonne le support de Python 3.8 en mars", "3월에 Jenkins를 GitHub Actions로
# 바꿉니다", "Android minSdk goes up to 26 starting with the 5.0 release").
_MONTH = (
    r"(january|february|march|april|may|june|july|august|september|october|november|december|janeiro|fevereiro|"
    r"março|abril|maio|junho|julho|agosto|setembro|outubro|novembro|dezembro|enero|febrero|marzo|mayo|junio|julio|"
    r"septiembre|octubre|noviembre|diciembre|janvier|février|mars|avril|mai|juin|juillet|août|septembre|octobre|"
    r"novembre|décembre|januar|februar|märz|juni|juli|oktober|dezember|q[1-4]|next\s+(quarter|release|sprint))"
)
PLAN_STATEMENT = _rx(
    rf"{B}on\s+(abandonne|arrête|lâche|supprime)\s+(le|la|les|l')\s*(support|prise\s+en\s+charge|compatibilité)",
    rf"{B}(on|nous)\s+(migre|migrons|passe|passons|bascule|basculons)\s+(à|a|sur|vers)\s+(?-i:[A-Z])",
    rf"{B}(wird|werden)\s+ab\s+\S+(\s+\d{{4}})?\s+nicht\s+mehr\s+(unterstützt|angeboten|gepflegt){E}",
    rf"{B}wir\s+(migrieren|wechseln|steigen|ziehen)\s+.{{0,30}}(zu|auf|nach)\s+(?-i:[A-Z])",
    r"(지원을?\s*(중단|종료)합니다|(으로|로)\s*(\S+\s+)?(바꿉니다|옮깁니다|이전합니다|전환합니다|마이그레이션합니다|갈아탑니다))",
    r"(쓰기로|쪼개기로|옮기기로|바꾸기로|전환하기로|도입하기로|이전하기로|중단하기로|분리하기로|없애기로)\s*했",
    r"(サポートを(打ち切|終了)|に移行します|に切り替えます|に移します)",
    r"(我们|我們).{0,10}(放弃|放棄|停止支持|迁移到|遷移到|换成|換成|改用|切换到|切換到)",
    rf"{B}(minsdk|min\s+sdk|minimum\s+(supported\s+)?version)\s.{{0,40}}(goes\s+up|moves|is\s+raised|rises)\s+to{E}",
    rf"{B}(the|our|o|a|la|le|el|nuestra|nossa|notre|unsere?|die|das)\s+(new\s+|nouvelle\s+|nueva\s+|nova\s+|neue\s+)?"
    rf"(mobile\s+app|app|aplicativo|aplicación|site|website|sitio|release|version|versão|versión|lançamento|"
    rf"lanzamiento)(\s+[\w-]+){{0,4}}\s+(ships|launches|goes\s+live|sort|sortira|sale|saldrá|sai|ficou\s+para|"
    rf"fica\s+para|erscheint|kommt)\s+(in|en|em|para|im|au\s+mois\s+de|el|in\s+the)?\s*{_MONTH}{E}",
    rf"{B}(the|our)\s+(mobile\s+|web\s+)?(app|site|website|backend|frontend|api|service)\s+is\s+being\s+(rewritten|rebuilt|"
    rf"migrated|ported)\s+(in|to|on)\s+(?-i:[A-Z])",
)
# One's own machines, names and schedules ("Der Testserver heißt test-03", "The nightly backup runs at 2am UTC",
# "Our build server runs on Debian 10", "Auf meinem Rechner läuft Fedora 40").
_TIME = r"(\d{1,2}(:\d{2})?\s*(am|pm|a\.m\.|p\.m\.|h|uhr|utc|gmt|cet|cest|pst|est)|\d{1,2}:\d{2}|\d{1,2}h\d{2})"
SETUP_FACT = _rx(
    rf"{B}[\w-]*(server|host|cluster|database|db|datenbank|bucket|vm|machine|box|servidor|serveur|rechner|instance|"
    rf"instanz|repo|repository|channel|kanal|canal)\s+(is\s+called|is\s+named|heißt|heisst|se\s+llama|se\s+chama|"
    rf"s'appelle|chama-se)\s+`?[\w.-]*\d[\w.-]*",
    r"(サーバー|サーバ|ホスト|クラスタ|データベース|DB|リポジトリ|チャンネル)(の名前)?は\s*`?[A-Za-z][\w.-]*\d[\w.-]*`?\s*(です|だ)",
    r"(服务器|服務器|主机|主機|集群|数据库|數據庫|仓库|倉庫)(的名字|名)?(叫|是)\s*[A-Za-z][\w.-]*\d",
    r"(서버|호스트|클러스터|데이터베이스|저장소)\s*(이름은|은|는)\s*[A-Za-z][\w.-]*\d",
    rf"{B}((nightly|daily|weekly|hourly|monthly)\s+[\w-]*\s*(backups?|builds?|jobs?|deploys?|deployments?|releases?|"
    rf"syncs?|reports?|exports?|imports?|snapshots?|standups?|runs?)|(backups?|cron\s*jobs?|standups?|stand-ups?)"
    rf")\s+(runs?|happens?|goes\s+out|go\s+out|is|are|kicks?\s+off|starts?)\s+(at|every|on)\s+(\w+\s+){{0,3}}{_TIME}",
    rf"{B}(backups?|builds?|deploys?|syncs?|exports?)\s+(runs?|happens?|kicks?\s+off|starts?)\s+(at|every)\s+{_TIME}",
    rf"{B}(backup|sauvegarde|daily|standup|sync|export)\s+.{{0,20}}(roda|corre|tourne|läuft|ocurre|acontece|a\s+lieu|"
    rf"findet)\s+(todos\s+os\s+dias\s+|todos\s+los\s+días\s+|chaque\s+\w+\s+|jeden\s+\w+\s+)?(às|a\s+las|à|um)\s+{_TIME}",
    rf"{B}(my|our|mein\w*|unser\w*|meu|minha|nosso|nossa|mi|mis|nuestr[oa]s?|mon|ma|notre|nos)\s+([\w-]+\s+){{0,2}}"
    rf"(runs(\s+on)?|läuft\s+(noch\s+|immer\s+noch\s+)?(auf|unter)|roda(\s+(em|no|na))?|corre\s+(en|sobre)|"
    rf"tourne\s+(sous|sur))\s+(?-i:[A-Z])",
    rf"{B}auf\s+(meinem|unserem)\s+[\w-]+\s+läuft\s+(?-i:[A-Z])",
    rf"{B}i('m|\s+am)\s+(much\s+|far\s+|way\s+|a\s+lot\s+)?(more|less)\s+(productive|focused|efficient|comfortable|"
    rf"creative)\s+(with|when|in|at|after|before){E}",
    # a shared thing of one's own place that only works one way ("a impressora do escritório só funciona pela rede
    # Convidados", "the office printer only works on the guest wifi", "der Drucker im Büro geht nur über VPN")
    rf"{B}(the\s+office|our|my|the\s+team's)\s+([\w-]+\s+){{0,2}}(printer|vpn|wifi|wi-fi|network|scanner|projector|"
    rf"laptop|desktop|server|nas|router|badge|door|coffee\s+machine)\s+only\s+works\s+(on|with|via|through|from|over|"
    rf"in|if|when){E}",
    rf"{B}(a|o|os|as)\s+(impressora|vpn|rede|wi-?fi|scanner|projetor|servidor|roteador)\s+(do|da|de)\s+(escritório|"
    rf"empresa|firma|casa|time|equipe)\s+(só|somente|apenas)\s+funciona(m)?\s+(pela|pelo|com|na|no|via|em|se|quando){E}",
    rf"{B}(la|el|los|las)\s+(impresora|vpn|red|wi-?fi|escáner|proyector|servidor|router)\s+de\s+la\s+(oficina|empresa)\s+"
    rf"(solo|sólo|únicamente)\s+funciona(n)?\s+(con|por|en|desde|vía|si|cuando){E}",
    rf"{B}(l'imprimante|le\s+vpn|le\s+wifi|le\s+réseau|le\s+scanner|le\s+projecteur|le\s+serveur)\s+du\s+bureau\s+ne\s+"
    rf"(marche|fonctionne)\s+que\s+(sur|avec|par|via|depuis|si|quand){E}",
    rf"{B}(der|das|die)\s+(drucker|vpn|wlan|netzwerk|scanner|beamer|server)\s+im\s+büro\s+(geht|funktioniert|läuft)\s+"
    rf"nur\s+(über|mit|im|per|von|wenn){E}",
    r"(办公室|辦公室|公司)的?(打印机|印表機|VPN|WiFi|wifi|网络|網路|投影仪|服务器)只能(用|连|連|通过|通過|在)",
    r"(会社|オフィス|事務所)の(プリンター|プリンタ|VPN|Wi-?Fi|ネットワーク|サーバー)は\S{1,20}でしか(使えません|使えない|"
    r"動きません|つながりません)",
    r"(사무실|회사)\s*(프린터|VPN|와이파이|네트워크|서버)(는|은)\s*.{1,20}(에서만|로만|으로만)\s*(돼요|됩니다|작동해요|작동합니다|"
    r"연결돼요)",
)
# An event of one's own moved to or fixed on a date ("the launch moved to May 3", "Der Umzug ist auf den 1. September
# verschoben", "产品发布会定在10月18号"): a decision with a calendar date, never a time of day alone ("moved to 3pm")
# or a day relative to now ("tomorrow").
_EN_MONTH = (
    r"(jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?|sep(t(ember)?)?|oct(ober)?|nov(ember)?|"
    r"dec(ember)?)"
)
_DAY_MONTH = (
    rf"({_EN_MONTH}\.?\s+\d{{1,2}}(st|nd|rd|th)?|\d{{1,2}}(st|nd|rd|th)?\s+(of\s+)?{_EN_MONTH}|"
    rf"\d{{1,2}}\.?\s*(de\s+)?{_MONTH}|\d{{1,2}}/\d{{1,2}}(/\d{{2,4}})?|\d{{4}}-\d{{2}}-\d{{2}})"
)
_EVENT = (
    r"(launch|release|go-?live|deadline|cutover|cut-?over|offsite|kick-?off|demo|migration|freeze|code\s+freeze|move|"
    r"office\s+move|wedding|conference|all-?hands|workshop|review|audit|rollout|roll-?out|ship\s+date|launch\s+date|"
    r"release\s+date|lançamento|entrega|prazo|mudança|evento|casamento|lanzamiento|plazo|mudanza|boda|evento|"
    r"lancement|livraison|déménagement|sortie|mise\s+en\s+prod(uction)?|échéance|mariage|salon|umzug|release|"
    r"launch|start|abgabe|termin|deadline|hochzeit|messe|veröffentlichung|go-live)"
)
DATED_CHANGE = _rx(
    rf"{B}(the|our|my)\s+([\w-]+\s+){{0,2}}{_EVENT}\s+(date\s+)?(has\s+been\s+|was\s+|got\s+|is\s+(now\s+)?)?"
    rf"(moved|pushed(\s+back)?|postponed|rescheduled|delayed|brought\s+forward|set|fixed|scheduled|locked\s+in|"
    rf"confirmed)\s+(to|for|on)\s+(the\s+)?{_DAY_MONTH}{E}",
    rf"{B}(o|a|os|as)\s+([\w-]+\s+){{0,2}}{_EVENT}(\s+[\w-]+){{0,3}}\s+(foi\s+|ficou\s+|está\s+)?(adiad[oa]|"
    rf"remarcad[oa]|transferid[oa]|marcad[oa]|fixad[oa]|movid[oa]|antecipad[oa]|confirmad[oa]|passou)\s+"
    rf"(para|pro|pra)\s+(o\s+dia\s+|dia\s+)?{_DAY_MONTH}{E}",
    rf"{B}(el|la|los|las)\s+([\w-]+\s+){{0,2}}{_EVENT}(\s+[\w-]+){{0,3}}\s+(se\s+)?(movió|pasó|aplazó|pospuso|"
    rf"retrasó|adelantó|fijó|cambió|quedó\s+(fijad[oa]\s+)?(para|en)|(fue|ha\s+sido|está)\s+(aplazad[oa]|"
    rf"pospuest[oa]|movid[oa]|fijad[oa]|confirmad[oa]))\s+(al|a|para\s+el|el|en)?\s*(día\s+)?{_DAY_MONTH}{E}",
    rf"{B}(le|la|l')\s*([\w-]+\s+){{0,2}}{_EVENT}(\s+[\w-]+){{0,3}}\s+(est|a\s+été)\s+(désormais\s+)?"
    rf"(décalée?|reportée?|avancée?|fixée?|prévue?|déplacée?|repoussée?|confirmée?)\s+(au|à|pour\s+le|le)\s+"
    rf"{_DAY_MONTH}{E}",
    rf"{B}(der|die|das|unser|unsere)\s+([\w-]+\s+){{0,4}}?{_EVENT}\w*(\s+[\w-]+){{0,4}}\s+(ist|wurde|wird)\s+"
    rf"(jetzt\s+|nun\s+)?(fix\s+|fest\s+|offiziell\s+)?(auf|für)\s+(den\s+)?{_DAY_MONTH}\s+(verschoben|festgelegt|"
    rf"gelegt|angesetzt|terminiert|vorgezogen){E}",
    r"(定在|改到|改在|推迟到|推遲到|延期到|提前到|挪到|定于|定於)\s*(\d{4}年)?\d{1,2}月\d{1,2}(号|號|日)",
    r"(は|が)\s*(\d{4}年)?\d{1,2}月\d{1,2}日(に|へ)(延期|変更|決定|決まり|前倒し|なりました|移り)",
    r"(이|가|은|는)\s*(\d{4}년\s*)?\d{1,2}월\s*\d{1,2}일(로|으로)\s*(연기|변경|확정|미뤄|당겨|옮겨|잡혔)",
)
# One's own health, body or diet ("soy intolerante a la lactosa", "tenho diabetes tipo 1", "je suis daltonien",
# "나 땅콩 알레르기 있어"): a closed list of lasting conditions, said of oneself in the first person, never of
# someone else ("mi abuelo tenía diabetes") or in general ("la diabetes tipo 1 es autoinmune").
_CONDITION_EN = (
    r"(diabetes|type\s+[12]\s+diabetes|celiac(\s+disease)?|coeliac(\s+disease)?|asthma|epilepsy|adhd|add|autism|"
    r"dyslexia|migraines|a\s+(peanut|nut|gluten|shellfish|egg|soy|milk|penicillin|latex)\s+allergy|"
    r"(a\s+|an\s+)?(nut|peanut|gluten|lactose|shellfish|egg|food|penicillin)\s+(allergy|intolerance)|"
    r"high\s+blood\s+pressure|tinnitus|color\s*blindness|colou?r-?blindness|crohn'?s(\s+disease)?|ibs|"
    r"hypothyroidism|a\s+pacemaker|hearing\s+loss)"
)
_CONDITION_ADJ_EN = (
    r"(lactose[\s-]intolerant|gluten[\s-]intolerant|diabetic|celiac|coeliac|colou?r-?blind|deaf(?!\s+to\b)|"
    r"hard\s+of\s+hearing|"
    r"epileptic|dyslexic|asthmatic|autistic|vegetarian|vegan|pescatarian|allergic\s+to\s+\w+|teetotal|"
    r"left-handed|short-sighted|near-?sighted)"
)
HEALTH_FACT = _rx(
    rf"^(i'?m|i\s+am)\s+(also\s+)?{_CONDITION_ADJ_EN}{E}",
    rf"^(i\s+have|i'?ve\s+got|i\s+have\s+got|i\s+live\s+with|i\s+suffer\s+from)\s+{_CONDITION_EN}{E}",
    rf"^(yo\s+)?soy\s+(intolerante\s+a(l|\s+la)?\s+\w+|celíac[oa]|celiac[oa]|diabétic[oa]|diabetic[oa]|"
    rf"daltónic[oa]|daltonic[oa]|asmátic[oa]|epiléptic[oa]|disléxic[oa]|sord[oa]|zurd[oa]|alérgic[oa]\s+a\s+\w+){E}",
    rf"^(yo\s+)?tengo\s+(diabetes|celiaquía|asma|epilepsia|tdah|dislexia|migrañas|daltonismo|hipertensión|"
    rf"intolerancia\s+a\s+\w+|alergia\s+a\s+\w+){E}",
    rf"^(eu\s+)?sou\s+(intolerante\s+a\s+\w+|celíac[oa]|celiac[oa]|diabétic[oa]|diabetic[oa]|daltônic[oa]|"
    rf"daltonic[oa]|asmátic[oa]|epiléptic[oa]|disléxic[oa]|surd[oa]|canhot[oa]|alérgic[oa]\s+a\s+\w+){E}",
    rf"^(eu\s+)?tenho\s+(diabetes|doença\s+celíaca|asma|epilepsia|tdah|dislexia|enxaqueca|daltonismo|"
    rf"hipertensão|pressão\s+alta|intolerância\s+à?\s*\w+|alergia\s+a\s+\w+){E}",
    rf"^je\s+suis\s+(daltonien(ne)?|diabétique|intolérant(e)?\s+(au|à\s+la)\s+\w+|cœliaque|coeliaque|"
    rf"asthmatique|épileptique|dyslexique|sourde?|gauchère?|allergique\s+(aux?|à\s+la)\s+\w+){E}",
    rf"^j'ai\s+(du\s+diabète|le\s+diabète|un\s+diabète|de\s+l'asthme|la\s+maladie\s+cœliaque|un\s+tdah|"
    rf"une\s+allergie\s+(aux?|à\s+la)\s+\w+|une\s+intolérance\s+(au|à\s+la)\s+\w+|des\s+migraines|"
    rf"de\s+l'hypertension|de\s+l'épilepsie){E}",
    rf"^ich\s+(bin|habe|hab)\s+(laktoseintolerant|glutenintolerant|farbenblind|diabetiker(in)?|zuckerkrank|"
    rf"legastheniker(in)?|epileptiker(in)?|asthmatiker(in)?|linkshänder(in)?|schwerhörig|diabetes|asthma|"
    rf"epilepsie|zöliakie|adhs|migräne|legasthenie|eine\s+\w*allergie|eine\s+\w*unverträglichkeit|"
    rf"eine\s+laktoseintoleranz|typ[\s-][12][\s-]diabetes){E}",
    r"^我(的)?(妈妈|媽媽|爸爸|妻子|丈夫|老婆|老公|儿子|兒子|女儿|女兒|母亲|母親|父亲|父親)?(有|患有|得了)?(糖尿病|哮喘|癫痫|癲癇|乳糖不耐|色盲|色弱|高血压|高血壓|麸质不耐|麩質不耐|偏头痛|偏頭痛|"
    r"\S{1,6}过敏|\S{1,6}過敏)(?!.*(吗|嗎|[?？]))",
    r"^我是(色盲|色弱|糖尿病人|素食者|左撇子)",
    r"^(私は|僕は|俺は|わたしは)?\S{0,8}(アレルギーがあります|アレルギーです|乳糖不耐症です|糖尿病です|"
    r"糖尿病があります|色弱です|色覚異常があります|喘息持ちです|喘息があります|ベジタリアンです|左利きです)",
    r"^(저는\s*|나는\s*|나\s+|저\s+|(우리|제|내)\s*(엄마|아빠|아내|남편|아들|딸|어머니|아버지)(가|는|도)\s*)?"
    r"\S{0,10}\s*(알레르기(가)?\s*있|당뇨(가|병이)?\s*있|색맹이|색약이|"
    r"유당불내증이\s*있|유당불내증이에요|천식이\s*있|채식주의자)",
)
# A temporary state or a repeat: never a standing statement ("for now", "this week", "while Sofia is out", "again").
TEMPORARY = _rx(
    rf"{B}(for\s+now|for\s+the\s+time\s+being|this\s+(week|sprint|month|time|morning|afternoon)|rerun|re-run|relance|relancez|"
    rf"temporarily|while\s+\w+\s+is\s+(out|away|off|on\s+leave)|again|once\s+more|por\s+ahora|por\s+el\s+momento|"
    rf"por\s+enquanto|por\s+agora|por\s+ora|esta\s+semana|essa\s+semana|otra\s+vez|de\s+nuevo|de\s+novo|"
    rf"pour\s+l'instant|pour\s+le\s+moment|cette\s+semaine|encore\s+une\s+fois|vorerst|fürs\s+erste|vorläufig|"
    rf"diese\s+woche|nochmal|provisoirement|temporalmente|temporariamente){E}",
    rf"{B}(desta|nesta|deste|neste|esta|este|ce|cette|diese[nmrs]?|diesem)\s+(sprint|semana|vez|fois|woche|mal){E}",
    r"(暂时|暫時|临时|臨時|这周|這週|今週|当面|今のところ|とりあえず|이번\s*주|당분간|일단|目前)",
)
# A complaint or praise about what the assistant just wrote, or a verdict on someone's work: not a standing rule
# ("The answers you gave were too short", "Respuestas demasiado largas, como siempre", "handles it badly").
VERDICT = _rx(
    rf"{B}(too\s+(long|short|verbose|wordy|terse|vague)|demasiado|demasiadas?|trop\s+(long|court|longue|courte)s?|"
    rf"zu\s+(lang|kurz|ausführlich)|muito\s+(long|curt)[oa]s?|como\s+siempre|como\s+sempre|comme\s+toujours|wie\s+immer|"
    rf"as\s+usual|you\s+(gave|wrote|sent|made)|badly|poorly|terribly|finally|worries\s+me|annoying|keep\s+(going|it\s+up|"
    rf"at\s+it|trying)|give\s+up|so\s+weiter|weiter\s+so|sigue\s+así|continue\s+comme\s+ça|continua\s+assim){E}",
    # "c'est nul", "never seen that": an exclamation about what is on the screen
    rf"{B}(c'est\s+nul|ça\s+craint|that\s+sucks|this\s+sucks|é\s+uma\s+porcaria|es\s+una\s+porquería|ist\s+(doch\s+)?mist|"
    rf"never\s+seen|nunca\s+(vi|había\s+visto|he\s+visto)|jamais\s+vu|(noch\s+)?nie\s+gesehen){E}",
    r"(从来没见过|從來沒見過|从没见过|從沒見過|見たことがない|見たことない|처음\s*봐|본\s*적이?\s*없)",
)
# What only the classifier might keep and must not: someone's one-off act in the past ("Dana signed off on the
# refund yesterday", "Marta aprobó mis vacaciones"), general knowledge about a health condition ("Type 1 diabetes is
# an autoimmune condition", "la celiaquía no tiene cura") and an event moved to a day relative to now ("회의는 내일로
# 미뤄졌어요"). The rules keep the standing kinds they resemble (roles, health facts, dated changes).
PAST_ACT = _rx(
    rf"{B}(approved|signed\s+off|signed|okayed|ok'd|rejected|validated|aprobó|firmó|validó|rechazó|aprovou|assinou|"
    rf"validou|recusou|rejeitou|a\s+(validé|approuvé|signé|refusé|rejeté)|hat\s+.{{0,40}}(genehmigt|freigegeben|"
    rf"unterschrieben|abgelehnt)){E}",
    r"(批了|批准了|签了字|簽了字|签字了|簽字了|审批通过了|審批通過了|承認してくれました|承認しました|承認されました|"
    r"승인해\s*줬|승인했|승인됐)",
)
_CONDITION_NOUN = (
    r"(diabetes|diabète|diabete|celiac\s+disease|coeliac\s+disease|celiaquía|celiaquia|doença\s+celíaca|"
    r"maladie\s+cœliaque|zöliakie|asthma|asma|asthme|lactose\s+intolerance|intolerancia\s+a\s+la\s+lactosa|"
    r"intolerância\s+à\s+lactose|intolérance\s+au\s+lactose|laktoseintoleranz|colou?r\s*blindness|daltonismo|"
    r"daltonisme|farbenblindheit|epilepsy|epilepsia|épilepsie|epilepsie|migraines?|migrañas?|enxaquecas?|migräne|"
    r"(peanut|nut|food)\s+allerg(y|ies)|alergias?|allergies?|allergien?|adhd|tdah|adhs)"
)
HEALTH_GENERAL = _rx(
    rf"^(the\s+|o\s+|a\s+|as\s+|os\s+|la\s+|las\s+|el\s+|los\s+|le\s+|les\s+|l'|die\s+|der\s+)?"
    rf"(type\s+[12]\s+)?{_CONDITION_NOUN}(\s+(de\s+)?(tipo|type|typ)\s+[12])?\s+(is|are|es|son|é|são|est|sont|ist|sind|"
    rf"has|have|no\s+tiene|não\s+tem|n'a\s+pas|hat|affects?|afecta|afeta|touche|betrifft|can|puede|pode|peut|kann){E}",
    r"^(糖尿病|哮喘|乳糖不耐|色盲|癫痫|癲癇|花生过敏|花生過敏|アレルギー|糖尿病|喘息|천식|당뇨|알레르기)\S{0,4}(是|能|可以|会|會|は|が|는|은|가|이)",
)
RELATIVE_MOVE = _rx(
    rf"{B}(moved|pushed|postponed|rescheduled|delayed|aplazad[oa]|movid[oa]|pospuest[oa]|se\s+movió|adiad[oa]|remarcad[oa]|"
    rf"reportée?|décalée?|verschoben)\s+(to\s+|al?\s+|para\s+|à\s+|auf\s+)?(tomorrow|tonight|later|mañana|amanhã|"
    rf"demain|morgen|ce\s+soir|heute\s+abend){E}|{B}(ist|wurde)\s+auf\s+morgen\s+verschoben{E}",
    r"(明天|今晚|明日|今夜|내일|오늘\s*밤)\S{0,3}(改|推迟|推遲|延期|に変更|に延期|로|으로)",
)
# Scopes that make a statement standing, not one-off, though they point ("in this project", "このプロジェクトでは").
STANDING_SCOPE = _rx(
    # "here" as in "where we work", said with a rule: "aqui tudo passa por PR", "here everything goes through review"
    rf"{B}(here|aqui|aquí|ici|hier)\s+(at\s+work\s+|na\s+empresa\s+|no\s+time\s+|en\s+la\s+empresa\s+|"
    rf"au\s+bureau\s+|in\s+der\s+firma\s+)?(everything|everyone|nobody|we\s+always|we\s+never|tudo|todo\s+mundo|"
    rf"ninguém|nada|a\s+gente\s+sempre|todo|todos|nadie|siempre|tout|tout\s+le\s+monde|personne|on\s+toujours|"
    rf"alles|jeder|niemand|immer){E}",
    rf"{B}(this|that)\s+(project|repo|repository|codebase|team|company){E}",
    rf"{B}(este|esse|neste|nesse|deste|desse|en\s+este)\s+(projeto|proyecto|repositório|repositorio|repo|time|equipo){E}",
    rf"{B}(ce|dans\s+ce)\s+(projet|dépôt|repo){E}",
    rf"{B}(diese[nmrs]?|in\s+diesem)\s+(projekt|repo|repository|team){E}",
    r"この(プロジェクト|リポジトリ|チーム)|(这个|這個)(项目|項目|仓库|倉庫|团队|團隊)|이\s+(프로젝트|저장소|팀)",
)
# "now", "today" on a decision already taken is when it was taken ("Decidimos largar o Jira; agora tudo fica no
# Linear"), not the task at hand
DECIDED = _rx(
    rf"{B}(we|i)\s+(have\s+|'ve\s+)?(decided|agreed|settled\s+on)|{B}(decidimos|decidi|decidí|hemos\s+decidido|"
    rf"acordamos|avons\s+décidé|a\s+décidé|haben\s+(uns\s+)?(entschieden|beschlossen|geeinigt)){E}",
    r"(决定|決定|決めました|결정했)",
)
_NOW = _rx(
    rf"(?<!for\s)(?<!from\s){B}(now|today|agora|ahora|maintenant|jetzt|hoje|hoy|heute|aujourd'hui){E}",
    r"(现在|現在|今天|今日|오늘|지금)",
)


# when a change was heard of, not how long it holds ("the launch moved to May 3, marketing confirmed this morning")
_SAID_WHEN = _rx(
    rf"{B}(this|esta|essa|ce|cette|heute)\s+(morning|afternoon|evening|mañana|tarde|manhã|matin|après-midi|morgen|"
    rf"nachmittag){E}"
)


def _said_when(text: str) -> str:
    return _SAID_WHEN.sub(" ", text)


def _at_hand(text: str) -> bool:
    """About the task at hand (DEIXIS), once standing scopes and a decision's "now" are set aside."""
    rest = STANDING_SCOPE.sub(" ", text)
    if (DECIDED.search(rest) or DATED_CHANGE.search(rest)) and not TEMPORARY.search(_said_when(rest)):
        rest = _NOW.sub(" ", rest)
    return bool(DEIXIS.search(rest))


STANDING_KINDS = (
    (ROLE_STATEMENT, "entity", "role"),
    (PROCEDURE, "fact", "procedure"),
    (STYLE_ORDER, "preference", "standing order"),
    (PLAN_STATEMENT, "decision", "plan"),
    (SETUP_FACT, "fact", "setup"),
    (HEALTH_FACT, "fact", "health"),
)


# a one-off request for a number of things ("Give me three names for a coffee shop")
COUNTED_REQUEST = _rx(
    r"^(please\s+)?(give|write|suggest|list|show|find|draft|generate|brainstorm)\s+(me\s+|us\s+)?(\d+|two|three|four|"
    r"five|six|seven|eight|nine|ten|a\s+few|a\s+couple\s+of|some)\s"
)


def passing(text: str) -> bool:
    """A temporary state, a repeat, a verdict on the work at hand, a request for a number of things, a one-off
    scope ("just this answer", "for this question"), a question about what is remembered, someone's one-off act in
    the past, general knowledge about a health condition, an event moved to a day relative to now, or general
    knowledge about public things: what the classifier alone may not keep."""
    return bool(
        TEMPORARY.search(text)
        or VERDICT.search(text)
        or COUNTED_REQUEST.search(text)
        or ONCE.search(text)
        or RECALL_QUESTION.search(text)
        or PAST_ACT.search(text)
        or HEALTH_GENERAL.search(text)
        or RELATIVE_MOVE.search(text)
        or _public(text)
    )


def standing_statement(text: str) -> Candidate | None:
    """A standing statement without a cue word (STANDING_KINDS), unless temporary or about public things."""
    if TEMPORARY.search(text) or VERDICT.search(text) or HEDGE.search(text) or ONCE.search(text):
        return None
    for pattern, category, reason in STANDING_KINDS:
        if not pattern.search(text):
            continue
        if _public(text if reason == "plan" else _PLATFORM.sub(" ", text)):
            return None
        if reason == "role" and _TOOL.search(text.strip()):  # "Redis runs the queue": software, not a role
            return None
        # "our build is `make all` but it keeps failing" (not "when the deploy fails, we roll back with …")
        if reason == "procedure" and _BROKEN.search(text) and not _CONTINGENT.search(text):
            return None
        return Candidate(text, category, reason, 0.7)
    return None


# a failure or a cancellation: a procedure that "keeps failing" or a date "then cancelled" is news, not a standing fact
_BROKEN = _rx(
    rf"{B}(fail|fails|failing|failed|broken|breaks|crash(es|ed|ing)?|cancell?ed|falla|falló|fallando|quebr\w+|"
    rf"cancelad[oa]|cassée?|plante|annulée?|kaputt|abgesagt|scheitert|gescheitert){E}",
    r"(失败|失敗|取消|キャンセル|落ちて|실패|취소|깨져)",
)

_CONTINGENT = _rx(
    rf"{B}(when|whenever|if|in\s+case|wenn|falls|si|cuando|quand|lorsque|se|quando){E}",
    r"(たら|場合|的话|的話|时|時|면)",
)


def dated_change(text: str) -> bool:
    """An event of one's own moved to or fixed on a calendar date (DATED_CHANGE), unless said as a guess, a
    temporary state or a one-off (the time it was heard of, "this morning", does not count)."""
    if not DATED_CHANGE.search(text) or HEDGE.search(text) or ONCE.search(text) or VERDICT.search(text):
        return False
    if _public(text) or _BROKEN.search(text):  # "The WWDC keynote is set for June 5", "… but then cancelled"
        return False
    return not TEMPORARY.search(_said_when(text))


# a conditional that only says when to do a one-off task ("If you can, ...", "When you're done, ...")
ONE_OFF_CONDITION = _rx(
    r"^(if|when|once|after)\s+(you\s+(can|get\s+a\s+chance|have\s+(a\s+)?(moment|minute|sec|second|time)|finish|"
    r"are\s+(done|finished|ready)|'re\s+(done|finished|ready))|you're\s+(done|finished|ready)|it\s+finishes|"
    r"it'?s\s+done|that'?s\s+done|possible)",
    r"^(si|cuando)\s+(puedes|tienes\s+(un\s+)?(momento|tiempo|rato)|termines|acabes|es\s+posible)",
    r"^(se|quando)\s+(puder(es)?|der|tiver(es)?\s+(um\s+)?(tempo|momento)|terminar(es)?|acabar(es)?|poss[ií]vel)",
    r"^(si|quand|lorsque)\s+(tu\s+)?(peux|as\s+(le\s+temps|un\s+moment)|auras\s+fini|as\s+fini|termines|possible)",
    r"^(wenn|falls)\s+(du\s+)?(kannst|zeit\s+hast|fertig\s+bist|möglich)",
)


_TO_ME = _rx(rf"{B}(i|me|my|you|ich|mir|mich|yo|te|je|moi|tu|eu|você){E}")


# A main clause with no comma before it, or an order inside the condition's own clause: an order with a pronoun
# attached, or after "first" / "always" / "then" ("si falla el deploy avísale primero a Lucía", "wenn ich nach Code
# frage bitte immer mit Typannotationen", "if the build breaks then ping Dana"); never "if I always use tabs".
_NO_SUBJECT = r"(?<!\bi\s)(?<!you\s)(?<!we\s)(?<!they\s)(?<!he\s)(?<!she\s)(?<!it\s)"
_CLITIC_ORDER = (
    r"(avísale|avísales|avísame|avísanos|llámale|llámalo|llámala|llámame|escríbele|escríbeme|mándale|mándame|dile|"
    r"pregúntale|pregúntame|me\s+avisa|me\s+avise|avise\s+(o|a)|avisa\s+(o|a)|chama\s+(o|a)|chame\s+(o|a)|"
    r"fala\s+com|préviens-moi|préviens-le|préviens-la|appelle-moi|écris-moi|dis-moi|sag\s+mir|schreib\s+mir|"
    r"ruf\s+mich|gib\s+mir\s+bescheid|sag\s+\w+\s+bescheid)"
)
MID_ORDER = _rx(
    rf"\s{_CLITIC_ORDER}{E}",
    rf"\s{_NO_SUBJECT}(then|first|always|never)\s+{_ORDER}{E}",
    rf"\s(primero|siempre|primeiro|sempre|d'abord|toujours|zuerst|immer|bitte)\s+(me\s+|te\s+|le\s+|mir\s+)?"
    rf"({_ORDER_OTHER}|{_CLITIC_ORDER}){E}",
    r"\s(bitte|please|por\s+favor|s'il\s+te\s+pla[iî]t)\s+(immer|nie|always|never|siempre|nunca|sempre|toujours|"
    r"jamais)\s+(mit|con|com|avec|with|in|en|em|auf|sin|sem|sans|ohne)\s",
)
# A standing contingency in zh / ja / ko: something breaks, then someone is told or something is done first
# ("ビルドが落ちたら、まず佐藤さんにSlackで連絡するようにして", "部署失败的话先通知小李", "배포가 실패하면 먼저
# 민수 님한테 연락해 주세요"); a practice ("〜ようにして") after any condition. Not "when you're done, tell me".
_BREAKS_JA = (
    r"(落ちたら|失敗したら|こけたら|コケたら|エラーが出たら|壊れたら|止まったら|障害が(出|起き)たら|"
    r"(場合|とき|時)は|たびに)"
)
_BREAKS_ZH = r"(失败|失敗|挂了|掛了|出错|出錯|报错|報錯|崩了|宕机|宕機|出问题|出問題|每次|每当|每當|一旦)"
_BREAKS_KO = r"(실패하면|깨지면|터지면|에러가\s*나면|장애가\s*나면|문제가\s*생기면|죽으면|할\s*때마다|경우에는)"
CJK_STANDING_CONDITIONAL = _rx(
    r"(たら|場合は|ときは|時は|たびに|なら)、?.{0,50}(ようにして(ください|ね)?|ようにお願いします)[。.!]?$",
    rf"{_BREAKS_JA}、?\s*(まず|必ず|いつも|先に|すぐ).{{0,40}}(して(ください)?|連絡|教えて|知らせて)",
    rf"{_BREAKS_ZH}\S{{0,12}}(的话|的話|的时候|的時候|时|時)?[,，]?\s*(先|一定|务必|務必|都|总是|總是|马上|馬上)(要)?"
    r"(通知|告诉|告訴|找|联系|聯繫|回滚|回滾|停|叫)",
    rf"{_BREAKS_KO}\s*,?\s*(먼저|항상|꼭|반드시|무조건|바로)\s*.{{1,40}}(주세요|해\s*줘|하세요|해요|연락해|알려\s*줘)",
)


# a condition that opens with "always" and has no comma to end it: the always belongs to the condition
ALWAYS_IN_CONDITION = _rx(
    rf"(?:{CONDITION.pattern})\s*(always|never|siempre|nunca|sempre|toujours|jamais|immer|nie|niemals){E}"
)


def standing_rule(text: str) -> bool:
    """Whether a conditional statement is a standing instruction (see CONDITION above), not a hypothetical."""
    stripped = text.strip()
    if QUESTION_END.search(stripped):
        return False
    if CJK_STANDING_CONDITIONAL.search(stripped):
        return not (DEIXIS.search(stripped) or HEDGE.search(stripped) or ONCE.search(stripped))
    if not CONDITION.search(stripped):
        return False
    # the main clause: after the first comma, or (no comma) the whole text, where only unanchored cues count
    head, _, tail = stripped.partition(",")
    main = tail.strip() if tail else " " + stripped
    if not tail and ALWAYS_IN_CONDITION.match(stripped):  # "si siempre con prisa nada sale bien": a saying
        return False
    if UNREAL.search(stripped) or DEIXIS.search(stripped) or ONE_OFF_CONDITION.search(stripped):
        return False
    if any(condition.search(stripped) and unreal.search(stripped) for condition, unreal in ROMANCE_UNREAL):
        return False
    return bool(STANDING_MAIN.search(main) or ROLE_STATEMENT.search(main.strip()) or MID_ORDER.search(" " + head))


EXAMPLE = _rx(
    rf"{B}(for\s+example|e\.g\.|as\s+an\s+example|por\s+ejemplo|por\s+exemplo|par\s+exemple|zum\s+beispiel){E}"
)
LOCAL_SCOPE = _rx(rf"{B}(here|there|in\s+this\s+(function|file|line|loop|test|snippet))\s*(instead)?[.!]?\s*$")
MARKUP = re.compile(r"^\s*(<[a-zA-Z/!]|```|\{|\[|\$ |>>>|Traceback|diff --git)|```|<system|<tool|</")


@dataclass(frozen=True)
class Candidate:
    text: str
    category: str
    reason: str
    importance: float = 0.7


# "quem aprova reembolso é a Sônia Prado": opens like a question, names the answer (no question mark)
WHO_IS = _rx(rf"^(quem|quien|wer)\s.{{1,60}}\s(é|es|ist)\s+(o\s+|a\s+|el\s+|la\s+|der\s+|die\s+)?{_NAME}")


def _is_question(text: str) -> bool:
    stripped = text.strip()
    if QUESTION_END.search(stripped):
        return True
    return bool(QUESTION_START.match(stripped.lower())) and not WHO_IS.search(stripped)


def reject_reason(text: str) -> str | None:
    """Why a statement must never be captured (None when it may be)."""
    stripped = text.strip()
    if len(stripped) < MIN_CHARS and not has_cjk(stripped):
        return "too short"
    if len(stripped) < 4:
        return "too short"
    if len(stripped) > MAX_CHARS:
        return "too long"
    if "<relevant-memories>" in stripped or "relevant-memories" in stripped:
        return "injected memories"
    if MARKUP.search(stripped):
        return "markup or tool output"
    if has_secret(stripped):
        return "contains a secret"
    if JOKING.search(stripped):
        return "joking"
    # "Puedes llamarme Lupe." is how to address the user, not a question
    addressed = bool(ADDRESS.search(stripped)) and not QUESTION_END.search(stripped)
    if standing_rule(stripped):
        return None
    if _is_question(stripped) and (not REMEMBER.search(stripped) or RECALL_QUESTION.search(stripped)) and not addressed:
        return "question"
    if HYPOTHETICAL.search(stripped) or (EXAMPLE.search(stripped) and not REMEMBER.search(stripped)):
        return "hypothetical or about someone else"
    return None


BROAD_CATEGORY = (
    ("preference", _rx(rf"{B}(prefers?|likes?|loves?|hates?|dislikes?|favou?rite|enjoys?|wants?){E}")),
    ("decision", _rx(rf"{B}(decided|decision|agreed|chose|will\s+use|going\s+with|switched\s+to){E}")),
    (
        "entity",
        _rx(
            r"[\w.+-]+@[\w-]+\.\w+", rf"{B}(is\s+called|named|phone|e-?mail|birthday|lives\s+in|works\s+(at|as|on)){E}"
        ),
    ),
    ("fact", _rx(rf"{B}(is|are|was|were|has|have|runs?|uses?){E}")),
)


def classify(text: str) -> str | None:
    """The category of a statement someone chose to store: the capture rules first, then broader cues
    (third person included: "Priya prefers Slack"). None when nothing fits."""
    candidate = rule_candidate(text, check_rejects=False)
    if candidate:
        return candidate.category
    for category, pattern in BROAD_CATEGORY:
        if pattern.search(text):
            return category
    return None


def rule_candidate(text: str, check_rejects: bool = True) -> Candidate | None:
    """The rule-based decision for one statement."""
    if check_rejects and reject_reason(text) is not None:
        return None
    if _at_hand(text):  # about the task at hand; the classifier decides
        return None
    explicit = bool(REMEMBER.search(text))
    if standing_rule(text):
        # an order to the assistant about the user's own requests is a preference, a team's procedure a fact
        category = "preference" if _TO_ME.search(text) else "fact"
        return Candidate(text, category, "standing rule", 0.8)
    if ADDRESS.search(text) and not ONCE.search(text) and not _public(text):
        return Candidate(text, "preference", "address", 0.8)
    if DECISION.search(text) and not LOCAL_SCOPE.search(text):
        return Candidate(text, "decision", "decision", 0.8 if explicit else 0.7)
    if CONTACT.search(text) or (EMAIL.search(text) and explicit) or (has_phone(text) and explicit):
        return Candidate(text, "entity", "contact", 0.8)
    if PREFERENCE.search(text):
        return Candidate(text, "preference", "preference", 0.8 if explicit else 0.7)
    if PERSON.search(text):
        return Candidate(text, "entity", "person", 0.8 if explicit else 0.7)
    standing = standing_statement(text)
    if standing is not None:
        return standing
    if dated_change(text):
        return Candidate(text, "decision", "date", 0.7)
    if explicit:
        return Candidate(text, "fact", "remember", 0.9)
    return None


_SENTENCE_SPLIT = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])|\n+")


def statements(message: str) -> list[str]:
    """Sentences of a user message (a message often carries one memorable sentence among chatter)."""
    text = strip_injected(message)
    parts = [p.strip() for p in _SENTENCE_SPLIT.split(text) if p and p.strip()]
    return [p for p in parts if p]


def _units(message: str) -> list[list[str]]:
    """What is judged of one message: the whole (up to 200 characters), then its sentences one by one."""
    whole = own_words(strip_injected(message)).strip()  # never what the user quotes from someone else
    if not whole:
        return []
    sentences = statements(whole)
    if len(whole) > 200:
        return [[s] for s in sentences]
    return [[whole, *sentences]] if len(sentences) > 1 else [[whole]]


def extract_rules(user_messages: Iterable[str], limit: int | None = 3, scorer: Scorer | None = None) -> list[Candidate]:
    """Candidates from user messages, first-come, at most `limit` (None: all), no repeated text.

    The rules decide first; with a `scorer` (the capture classifier on the model's vectors, see
    `classifier.py`) a statement the rules pass over is kept when its probability reaches the classifier's
    threshold. The rejects (questions, secrets, markup, injected memories, hypotheticals) apply to both.
    """
    groups = [group for message in user_messages for group in _units(message)]
    scored: dict[str, tuple[float, str | None]] = {}
    if scorer is not None:
        pending = list(dict.fromkeys(u for g in groups for u in g if reject_reason(u) is None))
        pending = [u for u in pending if rule_candidate(u, check_rejects=False) is None]
        if pending:
            scored = dict(zip(pending, scorer(pending), strict=True))
    threshold = scorer.threshold if scorer is not None else 1.0  # no scorer: nothing is scored
    out: list[Candidate] = []
    seen: set[str] = set()
    for group in groups:
        candidate = None
        for unit in group:
            candidate = rule_candidate(unit)
            probability, category = scored.get(unit, (0.0, None))
            if candidate is None and probability >= threshold and not passing(unit):
                candidate = Candidate(unit, category or classify(unit) or "fact", "classifier", 0.7)
            if candidate is not None:
                break
        if candidate is None:
            continue
        key = candidate.text.casefold()
        if key in seen:
            continue
        seen.add(key)
        out.append(candidate)
        if limit is not None and len(out) >= limit:
            return out
    return out
