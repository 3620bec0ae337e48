"""Stop words dropped by the keyword-only query expansion, per language (data only; `keywords.py` uses them).

Languages: English, Spanish, Portuguese, German, French, Danish, Norwegian, Swedish, Arabic, Chinese,
Japanese, Korean — with vague time words (yesterday/ayer/昨天/어제...) as stop words, as OpenClaw has them.

The query's language is not detected: the Latin-script lists are merged, minus a few words that are function
words in one language but ordinary content words in English ("die", "war", "car", "son"...), so that an
English query about a car is not emptied by French. CJK lists are used on segmented CJK text: whole
particles/words for Japanese and Korean, words and single function characters for Chinese.
"""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


ENGLISH = _words(
    """
    a about above after again against all am an and any are aren't as at be because been before being below between
    both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each few for from
    further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him himself
    his how how's i i'd i'll i'm i've if in into is isn't it it's its itself just let's me more most mustn't my
    myself no nor not now of off on once only or other ought our ours ourselves out over own same shan't she she'd
    she'll she's should shouldn't so some such than that that's the their theirs them themselves then there there's
    these they they'd they'll they're they've this those through to too under until up very was wasn't we we'd we'll
    we're we've were weren't what what's when when's where where's which while who who's whom why why's will with
    won't would wouldn't you you'd you'll you're you've your yours yourself yourselves please tell remember recall
    might thing things stuff something anything everything nothing help find show get give
    yesterday today tomorrow earlier later recently ago now
    """
)

SPANISH = _words(
    """
    a al algo algunas algunos ante antes como con contra cual cuando de del desde donde durante e el ella ellas
    ellos en entre era eran es esa esas ese eso esos esta estaba estado estamos estan estar este esto estos estoy
    fue fueron ha han hasta hay la las le les lo los mas me mi mis mucho muy nada ni no nos nosotros o os otra otras
    otro otros para pero poco por porque que quien quienes se sea ser si sido sin sobre son su sus también te tiene
    tienen todo todos tu tus un una uno unos usted vosotros y ya yo qué cómo cuál cuándo dónde quién está están más
    él sí unas nosotras ustedes haber tener hacer porqué favor ayuda
    ayer hoy mañana después despues ahora recientemente
    """
)

PORTUGUESE = _words(
    """
    a ao aos aquela aquelas aquele aqueles aquilo as até com como da das de dela delas dele deles depois do dos e
    ela elas ele eles em entre era eram essa essas esse esses esta estas este estes eu foi foram há isso isto já lhe
    lhes mais mas me mesmo meu meus minha minhas muito na nas nem no nos nós o os ou para pela pelas pelo pelos por
    qual quando que quem se sem ser seu seus só sua suas também te tem teu tu tua um uma umas uns você vocês vos é
    está estão onde porque quais são ter fazer quê porquê favor ajuda
    ontem hoje amanhã antes agora recentemente
    """
)

GERMAN = _words(
    """
    aber alle allem allen aller alles als also am an ander andere anderen auch auf aus bei bin bis bist da damit
    dann das dass dein deine dem den denn der des dich die dies diese diesem diesen dieser dieses dir doch dort du
    durch ein eine einem einen einer eines er es etwas euch euer für hab habe haben hat hatte hatten hier hin ich
    ihm ihn ihnen ihr ihre im in ist ja jede jedem jeden jeder jedes kann kein keine können man mein meine mich mir
    mit muss nach nicht nichts noch nun nur ob oder ohne sehr sein seine sich sie sind so soll über um und uns unser
    unter viel vom von vor war waren warum was weil welche welcher wenn wer werden wie wieder will wir wird wo wurde
    würde zu zum zur zwischen
    """
)

FRENCH = _words(
    """
    a à au aux avec ce ces c'est cette comme comment dans de des du elle elles en est et été être eu il ils je la le
    les leur leurs lui ma mais me même mes moi mon ne nos notre nous on ont ou où par pas pour qu que quel quelle
    quelles quels qui quoi sa sans se ses si son sont sur ta te tes toi ton tu un une vos votre vous y car était
    étaient suis sommes êtes
    """
)

DANISH = _words(
    """
    en et den det de denne dette disse jeg mig min mit mine vi os vores du dig din dit dine han hun ham hende hans
    hendes dem deres sig sin sit sine man er var har havde vil ville kan kunne skal skulle må måtte blive blev
    blevet være gøre gør gik gå gået gerne i på til fra med af for om ved over under mellem efter før hos uden mod
    inden og eller men hvis så fordi når som at da dog samt enten hverken både hvad hvem hvor hvorfor hvordan
    hvornår hvilken hvilket hvilke nu lige tidligere senere nyligt fornylig snart noget nogen ingenting alting
    andet ting ikke også bare kun meget mere mest helt allerede altid aldrig stadig endnu her der hjælp vis giv
    fortæl igår idag imorgen
    """
)

NORWEGIAN = _words(
    """
    en ei et den det de denne dette disse jeg meg min mitt mine vi oss vår vårt våre du deg din ditt dine han hun
    ham henne hans hennes dem deres seg sin sitt sine man er var har hadde vil ville kan kunne skal skulle må måtte
    bli ble blitt være gjøre gjør gikk gå gått i på til fra med av for om ved over under mellom etter før hos uten
    mot og eller men hvis så fordi når som at da dog samt enten hverken både hva hvem hvor hvorfor hvordan hvilken
    hvilket hvilke nå akkurat tidligere senere nylig snart noe noen ingenting alt annet ting ikke også bare kun
    veldig mer mest helt allerede alltid aldri fortsatt ennå her der hjelp vis finn gi fortell igår idag imorgen
    """
)

SWEDISH = _words(
    """
    en ett den det de denna detta dessa jag mig min mitt mina vi oss vår vårt våra du dig din ditt dina han hon
    honom henne hans hennes dem deras sig sin sitt sina man är var har hade vill ville kan kunde ska skulle få
    fick bli blev blivit vara göra gör gick gå gått i på till från med av för om vid över under mellan efter före
    hos utan mot och eller men så därför när som att dock samt antingen varken både vad vem varför hur vilken
    vilket vilka nu just tidigare senare nyligen snart något någon ingenting allt annat sak inte också bara
    mycket mer mest helt redan alltid aldrig fortfarande ännu här där hjälp visa hitta ge berätta igår idag imorgon
    """
)

ARABIC = _words(
    """
    ال و أو او لكن ثم بل أنا انا نحن أنت انت هو هي هم هذا هذه ذلك تلك هنا هناك من إلى الى في على عن مع بين ل ب ك
    كان كانت يكون تكون صار أصبح يمكن ممكن بالأمس امس أمس الأمس اليوم غدا الآن الان قبل بعد مؤخرا لماذا كيف ماذا
    متى أين اين هل ما فضلك فضلا ساعد التي الذي الذين كل أي اي قد لا لم لن إن ان أن
    """
)

# Words that are function words in another language but common content words in English: kept searchable.
ENGLISH_CONTENT_WORDS = _words(
    """
    die war car son era sin con den dos man also will hat bin mist fin sale
    mod alt var min mine dig dog men bare han hun dem ting vis ge gi sak mot hos ved av ei bli ble kun samt lige
    """
)

CHINESE_WORDS = _words(
    """
    我们 你们 他们 她们 它们 什么 怎么 怎样 为什么 为什 如何 哪里 哪儿 哪个 哪些 谁的 这个 那个
    这些 那些 这里 那里 没有 可以 一下 一个 还是 或者 而且 但是 因为 所以 如果 虽然 然后 关于
    之前 之后 时候 知道 告诉 记得 是否 是不是 有没有 能不能 请问
    """
)

# Vague time words: a memory search for "what we discussed yesterday" needs the topic, not the word.
CHINESE_TIME = _words(
    """
    昨天 今天 明天 最近 刚才 现在 以前 以后 之前 之后 前天 后天
    """
)

CHINESE_WORDS = CHINESE_WORDS | CHINESE_TIME

# Single characters that are (almost) never part of a content word: the query is split on them.
CHINESE_CHARS = _words(
    """
    的 吗 呢 吧 啊 呀 嘛 哦 我 你 他 她 它 是 或 也 很 把 被 给 让
    """
)

JAPANESE = _words(
    """
    の は が を に で と も へ や か な ね よ から まで より など です ます でした ました
    ません だ である について という として による における ください これ それ あれ この その あの
    ここ そこ どこ なに なん どう どの いつ だれ 誰 何 する した して され いる いた ある
    あった ない こと もの そして しかし また でも ため だけ なる できる あそこ どれ なぜ さっき
    昨日 今日 明日 最近
    """
)

KOREAN = _words(
    """
    그 이 저 것 수 등 및 또 또는 그리고 하지만 그러나 그래서 그런데 때문에 대한 대해 대해서
    위해 통해 무엇 뭐 어떻게 왜 언제 어디 누가 누구 어느 있다 없다 하다 했다 합니다 입니다
    있나요 인가요 했나요 나요 요
    은 는 을 를 의 에 에서 로 으로 와 과 도 만 까지 부터 한테 에게 께 처럼 같이 보다 마다 밖에 대로
    나 나는 내가 나를 너 우리 저희 그녀 그들 이것 저것 그것 여기 저기 거기 되다 아니다 주다 오다 가다
    거 때 곳 중 분 잘 더 매우 정말 아주 많이 너무 좀 그러면 어떤 어제 오늘 내일 최근 지금 아까 나중 전에 제발 부탁
    """
)

# Korean particles (josa) glued to the end of a word; longest first so "에서는" wins over "는".
KOREAN_PARTICLES = (
    "에서는",
    "에게서",
    "으로써",
    "으로서",
    "으로는",
    "에서",
    "에게",
    "한테",
    "으로",
    "로서",
    "로써",
    "부터",
    "까지",
    "보다",
    "처럼",
    "만큼",
    "이랑",
    "하고",
    "은",
    "는",
    "을",
    "를",
    "이",
    "가",
    "에",
    "의",
    "와",
    "과",
    "도",
    "로",
    "만",
)
# Polite/question verb endings stripped before the particle (언제인가요 -> 언제); longest first.
KOREAN_ENDINGS = (
    "했었나요",
    "였나요",
    "인가요",
    "입니까",
    "합니까",
    "습니까",
    "했나요",
    "했어요",
    "입니다",
    "합니다",
    "습니다",
    "이에요",
    "예요",
    "인가",
    "나요",
    "했다",
    "이다",
)
# Stripped only when at least two syllables remain: these also end ordinary nouns (아이, 나라도...).
KOREAN_AMBIGUOUS_PARTICLES = frozenset(["이", "가", "도", "로", "만", "의", "와", "과", "에"])


def _with_apostrophe_pieces(words: frozenset[str]) -> frozenset[str]:
    """Queries are cut into \\w+ words, so "don't" arrives as "don" and "t": list the pieces too."""
    return words | frozenset(piece for word in words for piece in word.split("'") if piece)


# One merged list: the query's language is unknown.
LATIN = _with_apostrophe_pieces(
    ENGLISH | ((SPANISH | PORTUGUESE | GERMAN | FRENCH | DANISH | NORWEGIAN | SWEDISH) - ENGLISH_CONTENT_WORDS)
)

BY_LANGUAGE: dict[str, frozenset[str]] = {
    "en": ENGLISH,
    "es": SPANISH,
    "pt": PORTUGUESE,
    "de": GERMAN,
    "fr": FRENCH,
    "zh": CHINESE_WORDS | CHINESE_CHARS,
    "ja": JAPANESE,
    "ko": KOREAN,
    "ar": ARABIC,
    "da": DANISH,
    "nb": NORWEGIAN,
    "sv": SWEDISH,
}
