#!/usr/bin/env python3
"""The tasks myriad-tiny learns and is graded on: one generator shared by training
(tools/train_tiny/train.py), the torch bar check there and the make-test bar check
(tests/python/test_shipped_model_quality.py). Standard library only.

A conversation is OpenAI-style messages (Kimi-K2-Thinking's chat format once rendered by the
model's chat template): every assistant turn carries a short `reasoning_content` (rendered as
`<think>…</think>`) before its content or tool call.

- make_training_examples(seed, n): n examples, each {"tools", "messages", "train_calls"}: the
  last message is the assistant turn to learn; train_calls says whether the earlier assistant
  tool-call turn (kept with its reasoning) is worth learning too.
- make_eval_tasks(seed): 200 arithmetic tasks (no tools), 200 tool requests (TOOLS declared) and
  one follow-up with the tool's result per tool request. Phrasings and cities come from lists
  training never uses (HELD_OUT_*), so the bar measures generalisation, not recall.
- grade_*: the bar's graders, shared by the torch check and the myriad check.
"""

import json
import random
import re

# --- the tools ---------------------------------------------------------------------------------

LOOKUP_KEYS = {
    # key: names a user calls it by (all used in training and held-out requests alike)
    "wifi_password": ["wifi password", "Wi-Fi password", "wireless password"],
    "office_hours": ["office hours", "opening hours"],
    "support_email": ["support email", "support email address", "help desk email"],
    "support_phone": ["support phone number", "help desk phone number", "support hotline"],
    "office_address": ["office address", "address of the office"],
    "manager_name": ["manager's name", "name of the manager", "team manager"],
    "parking_code": ["parking code", "garage code"],
    "printer_name": ["printer name", "name of the printer"],
    "vpn_server": ["VPN server", "VPN address"],
    "meeting_room": ["meeting room", "room for the meeting"],
    "door_code": ["door code", "entrance code"],
    "lunch_special": ["lunch special", "special of the day in the canteen"],
}

# OpenAI function format; the eval declares exactly this list (same key order) too.
TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {"type": "object",
                       "properties": {"city": {"type": "string", "description": "city name"}},
                       "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "calculate",
        "description": "Evaluate an arithmetic expression.",
        "parameters": {"type": "object",
                       "properties": {"expression": {"type": "string",
                                                     "description": "e.g. 12 * 7"}},
                       "required": ["expression"]}}},
    {"type": "function", "function": {
        "name": "lookup",
        "description": "Look up a value in the office information table.",
        "parameters": {"type": "object",
                       "properties": {"key": {"type": "string",
                                              "description": "e.g. wifi_password"}},
                       "required": ["key"]}}},
]

# --- cities: training and held-out lists are disjoint ------------------------------------------

TRAIN_CITIES = """Paris|London|Berlin|Madrid|Rome|Vienna|Prague|Warsaw|Budapest|Lisbon|Dublin|
Amsterdam|Brussels|Copenhagen|Stockholm|Oslo|Helsinki|Athens|Istanbul|Moscow|Kyiv|Bucharest|Sofia|
Belgrade|Zagreb|Ljubljana|Bratislava|Vilnius|Riga|Tallinn|Reykjavík|Zürich|Geneva|Munich|Hamburg|
Frankfurt|Cologne|Stuttgart|Düsseldorf|Leipzig|Dresden|Milan|Naples|Turin|Florence|Venice|Bologna|
Barcelona|Valencia|Seville|Bilbao|Málaga|Porto|Lyon|Marseille|Toulouse|Nice|Bordeaux|Lille|
Manchester|Birmingham|Liverpool|Edinburgh|Glasgow|Bristol|Leeds|Cardiff|Belfast|Rotterdam|Utrecht|
Antwerp|Ghent|Gothenburg|Malmö|Bergen|Aarhus|Kraków|Gdańsk|Wrocław|Poznań|Brno|Graz|Salzburg|
Innsbruck|Thessaloniki|Ankara|İzmir|Tokyo|Osaka|Kyoto|Yokohama|Nagoya|Sapporo|Fukuoka|Seoul|Busan|
Beijing|Shanghai|Guangzhou|Shenzhen|Chengdu|Wuhan|Hong Kong|Taipei|Singapore|Bangkok|Hanoi|
Ho Chi Minh City|Manila|Jakarta|Kuala Lumpur|Delhi|Mumbai|Bangalore|Chennai|Kolkata|Hyderabad|
Karachi|Lahore|Dhaka|Kathmandu|Colombo|Tehran|Baghdad|Riyadh|Dubai|Abu Dhabi|Doha|Muscat|Amman|
Beirut|Jerusalem|Tel Aviv|Cairo|Alexandria|Casablanca|Marrakesh|Tunis|Algiers|Lagos|Abuja|Accra|
Dakar|Nairobi|Addis Ababa|Kampala|Dar es Salaam|Kinshasa|Luanda|Johannesburg|Cape Town|Durban|
Harare|Lusaka|New York|Los Angeles|Chicago|Houston|Phoenix|Philadelphia|San Antonio|San Diego|
Dallas|San Francisco|Seattle|Boston|Denver|Miami|Atlanta|Detroit|Minneapolis|Portland|Las Vegas|
Nashville|New Orleans|Austin|Baltimore|Pittsburgh|Cleveland|Salt Lake City|Kansas City|St. Louis|
Toronto|Montréal|Vancouver|Calgary|Ottawa|Edmonton|Winnipeg|Québec City|Halifax|Mexico City|
Guadalajara|Monterrey|Havana|Panama City|San José|Bogotá|Medellín|Lima|Quito|Caracas|Santiago|
Buenos Aires|Córdoba|Montevideo|Asunción|La Paz|São Paulo|Rio de Janeiro|Brasília|Salvador|Recife|
Sydney|Melbourne|Brisbane|Perth|Adelaide|Auckland|Wellington|Christchurch|Honolulu|Anchorage|
Tbilisi|Yerevan|Baku|Almaty|Tashkent|Ulaanbaatar|Novosibirsk|Saint Petersburg|Minsk|Chișinău|
Skopje|Sarajevo|Tirana|Podgorica|Valletta|Nicosia|Luxembourg|Monaco|Andorra la Vella|Bern|Basel|
Lausanne|Kaunas|Tartu|Tampere|Turku|Uppsala|Odense|Trondheim|Tromsø|Galway|Cork|Aberdeen|Oxford|
Cambridge|York|Nottingham|Sheffield|Newcastle|Brighton|Southampton"""

HELD_OUT_CITIES = """Hanover|Nuremberg|Bremen|Essen|Dortmund|Bonn|Mannheim|Heidelberg|Freiburg|
Palermo|Genoa|Verona|Pisa|Zaragoza|Granada|Alicante|Coimbra|Nantes|Strasbourg|Montpellier|Rennes|
Grenoble|Dijon|Leicester|Coventry|Plymouth|Swansea|Dundee|Inverness|Eindhoven|Groningen|Maastricht|
Bruges|Liège|Linz|Lucerne|Lugano|Łódź|Lublin|Szczecin|Ostrava|Debrecen|Cluj-Napoca|Brașov|Varna|
Plovdiv|Split|Dubrovnik|Novi Sad|Patras|Heraklion|Antalya|Bursa|Kobe|Hiroshima|Sendai|Nara|Incheon|
Daegu|Nanjing|Hangzhou|Tianjin|Kaohsiung|Da Nang|Chiang Mai|Cebu City|Surabaya|Bandung|Penang|
Pune|Ahmedabad|Jaipur|Lucknow|Kochi|Islamabad|Chittagong|Pokhara|Kandy|Isfahan|Shiraz|Mashhad|
Jeddah|Sharjah|Kuwait City|Manama|Haifa|Aswan|Luxor|Fez|Rabat|Tangier|Oran|Kano|Ibadan|Kumasi|
Mombasa|Kigali|Windhoek|Gaborone|Pretoria|Sacramento|Oakland|Tucson|Albuquerque|Oklahoma City|
Omaha|Milwaukee|Indianapolis|Columbus|Cincinnati|Charlotte|Raleigh|Richmond|Buffalo|Tampa|Orlando|
Jacksonville|Memphis|Louisville|El Paso|Fort Worth|Santa Fe|Boise|Spokane|Saskatoon|Regina|Puebla|
Tijuana|Cancún|Mérida|Oaxaca|Guatemala City|San Salvador|Tegucigalpa|Managua|Santo Domingo|
San Juan|Kingston|Cartagena|Cali|Guayaquil|Cusco|Arequipa|Valparaíso|Mendoza|Rosario|Porto Alegre|
Curitiba|Belo Horizonte|Fortaleza|Manaus|Hobart|Darwin|Canberra|Gold Coast|Queenstown|Dunedin|
Suva|Nouméa"""


def _split(text):
    return [c.strip() for c in text.replace("\n", "").split("|")]


TRAIN_CITIES = _split(TRAIN_CITIES)
HELD_OUT_CITIES = _split(HELD_OUT_CITIES)

# Pieces of made-up place names (pseudo_city).
_SYL = ["ka", "lo", "ven", "mar", "tis", "bel", "dor", "an", "ru", "sel", "mi", "tor", "quin",
        "za", "vel", "hol", "dra", "nis", "per", "gal", "ost", "um", "bri", "sko", "lin", "fa",
        "rey", "ish", "cor", "vak", "ne", "ju", "tam", "ber", "oz", "wyn", "ché", "lü", "så",
        "ño", "ham", "burg", "ville", "ton", "ford", "stad", "grad", "polis", "holm", "mouth"]
_CITY_WORDS = ["New", "Port", "San", "Santa", "Saint", "Fort", "Lake", "North", "South", "East",
               "West", "Upper", "Lower", "Old", "Mount", "Bay of", "El", "La", "Los", "Nueva"]


_HELD_OUT_RE = re.compile(r"(?<!\w)(?:" + "|".join(re.escape(c) for c in HELD_OUT_CITIES) +
                          r")(?!\w)")


def _markov_table(names):
    """Order-2 letter transitions of the training cities' words ('^' starts, '$' ends)."""
    table = {}
    for name in names:
        for word in re.split(r"[ \-.]+", name):
            if len(word) < 3:
                continue
            w = "^^" + word.lower() + "$"
            for i in range(2, len(w)):
                table.setdefault(w[i - 2:i], []).append(w[i])
    return table


_MARKOV = _markov_table(TRAIN_CITIES)
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_ACCENTED = "áàâäãåæçčćéèêëěíìîïłńñňóòôöõøőřśšșțúùûüůűýžźż"
_PLACE_WORDS = ["Falls", "Bay", "Harbor", "Springs", "Valley", "Heights", "Beach", "Creek", "Park",
                "Point", "City", "Town", "Hills", "Ridge", "Crossing", "Junction", "Rock", "Field"]


def _markov_word(r):
    while True:
        state, out = "^^", ""
        while len(out) < 14:
            c = r.choice(_MARKOV[state])
            if c == "$":
                break
            out += c
            state = state[1] + c
        if len(out) >= 3:
            return out.capitalize()


def _random_word(r):
    n = r.randint(3, 11)
    word = "".join(r.choice(_ACCENTED) if r.random() < 0.06 else r.choice(_LETTERS)
                   for _ in range(n))
    return word.capitalize()


def pseudo_city(r):
    """A made-up place name, so the model learns to copy a city rather than recall one: letters
    after the training cities (order-2 Markov), syllables, random letters, or English words."""
    roll = r.random()
    if roll < 0.5:
        word = _accented(r, _markov_word(r))
    elif roll < 0.7:
        word = "".join(r.choice(_SYL) for _ in range(r.choice([2, 2, 3, 3, 4]))).capitalize()
    elif roll < 0.85:
        word = _random_word(r)
    else:
        return f"{r.choice(_WORDS).capitalize()} {r.choice(_PLACE_WORDS)}"
    roll = r.random()
    if roll < 0.15:
        return f"{r.choice(_CITY_WORDS)} {word}"
    if roll < 0.3:
        return f"{word} {_accented(r, _markov_word(r))}"
    if roll < 0.35:
        return f"{word}-{_markov_word(r)}"
    if roll < 0.4:
        return f"{word} {r.choice(_PARTICLES)} {_markov_word(r)}"
    return word


_PARTICLES = ["de", "la", "del", "do", "es", "am", "an der", "sur", "of", "upon"]
_ACCENT = {"a": "áàâä", "e": "éèêë", "i": "íî", "o": "óôöø", "u": "úüû", "c": "çč", "n": "ñń",
           "s": "šș", "z": "žź", "l": "ł"}


def _accented(r, word):
    """Sometimes one letter of a made-up name gets an accent (Valparaíso, Łódź, Brașov)."""
    if r.random() >= 0.25:
        return word
    spots = [i for i, ch in enumerate(word) if ch.lower() in _ACCENT]
    if not spots:
        return word
    i = r.choice(spots)
    ch = r.choice(_ACCENT[word[i].lower()])
    return word[:i] + (ch.upper() if word[i].isupper() else ch) + word[i + 1:]


def training_city(r):
    if r.random() < 0.3:
        return r.choice(TRAIN_CITIES)
    while True:
        c = pseudo_city(r)
        if not _HELD_OUT_RE.search(c):  # no held-out city, not even as a word of a longer name
            return c


# --- phrasings: training and held-out lists are disjoint ---------------------------------------
# {e} is an arithmetic expression "a op b"; {c} a city; {k} a name of a lookup key.

# Training phrasings come from a small grammar (stems x endings), a few hundred per task, so the
# model learns the task from the numbers, the city or the key rather than from a fixed wording;
# the held-out phrasings below are written separately and removed from the grammar's output.

def _grammar(stems, endings, extra, held_out):
    out, seen, held = [], set(), set(held_out)
    for s in stems:
        for e in endings:
            t = s + e
            if t not in seen and t not in held:
                seen.add(t)
                out.append(t)
    for t in extra:
        if t not in seen and t not in held:
            seen.add(t)
            out.append(t)
    return out


TRAIN_PREFIXES = ["", "", "", "", "", "", "Hi! ", "Hi, ", "Hey, ", "Hey! ", "Hello. ", "Hello! ",
                  "Hi there. ", "Quick question: ", "Quick one: ", "OK. ", "OK, ", "Ok so ",
                  "Alright. ", "So, ", "Please, ", "Yo, ", "Sorry, ", "One more thing: ", "Next: ",
                  "Another one: ", "Good evening. ", "Morning! ", "Hey assistant, ", "Well, ",
                  "Hmm. ", "Now, ", "Right. ", "Math time. ", "Homework help: ",
                  "Good afternoon. ", "Nice day! ", "Happy Friday! ", "Have a good day. ",
                  "Good night. ", "Lovely day, ", "Hi, good to see you. "]
TRAIN_SUFFIXES = ["", "", "", "", "", "", " Thanks!", " Thanks.", " Thank you.", " Please.",
                  " Be quick.", " :)", " Thanks a lot!", " Much appreciated.", " ty", " Ta.",
                  " I need it for homework.", " Asking for a friend.", " Short answer please.",
                  " Thank you!", " Quickly please."]
ARITH_PREFIXES, ARITH_SUFFIXES, TOOL_PREFIXES = TRAIN_PREFIXES, TRAIN_SUFFIXES, TRAIN_PREFIXES

_ARITH_STEMS = ["What is {e}", "What's {e}", "what is {e}", "whats {e}", "How much is {e}",
                "What's the result of {e}", "What is the answer to {e}", "What's the value of {e}",
                "Tell me {e}", "Give me {e}", "Show me {e}", "Find {e}", "Compute {e}",
                "Calculate {e}", "Work out {e}", "Evaluate {e}", "Solve {e}", "Figure out {e}",
                "Do {e}", "Count {e}", "Check {e}", "Get me {e}", "Can you compute {e}",
                "Can you calculate {e}", "Can you work out {e}", "Can you do {e}",
                "Could you compute {e}", "Could you calculate {e}", "Would you calculate {e}",
                "Please compute {e}", "Please calculate {e}", "Please work out {e}",
                "Please solve {e}", "I need {e}", "I need the answer to {e}",
                "I want the result of {e}", "Help me with {e}", "Help me compute {e}", "Try {e}",
                "Result of {e}", "The answer to {e}", "Value of {e}", "I need to know {e}",
                "Tell me the answer to {e}", "How much does {e} make", "what's {e} equal to",
                "Answer this: {e}", "Quick: {e}", "Math: {e}", "Sum this up: {e}"]
_ARITH_ENDINGS = ["?", ".", "", "!", " please.", " please?", " for me.", " for me?", " now.",
                  ", please."]
_ARITH_EXTRA = ["{e}", "{e} = ?", "{e} =", "{e}?", "{e} is what?", "{e} makes what?",
                "{e} gives what?", "{e} = what?", "{e} is?", "{e} -> ?", "{e} is how much?",
                "{e} comes to what?", "I wonder what {e} is.", "Tell me what {e} comes to.",
                "{e}, what is it?", "{e}: the answer?", "So {e} is...?"]

HELD_OUT_ARITH_PREFIXES = ["", "", "Hey there! ", "Question: ", "Okay, ", "Good day. "]
HELD_OUT_ARITH_CORES = ["Could you tell me what {e} is?", "What does {e} equal?",
                        "{e} equals what?", "Do the math: {e}", "Determine {e}.",
                        "What do you get for {e}?", "Work this out for me: {e}",
                        "Mind computing {e}?", "Please evaluate {e} for me.",
                        "What would {e} be?"]
HELD_OUT_ARITH_SUFFIXES = ["", "", " Cheers.", " Thx."]
ARITH_CORES = _grammar(_ARITH_STEMS, _ARITH_ENDINGS, _ARITH_EXTRA, HELD_OUT_ARITH_CORES)

_WEATHER_STEMS = ["What's the weather in {c}", "What is the weather in {c}",
                  "what's the weather in {c}", "How's the weather in {c}",
                  "How is the weather in {c}", "What's the weather like in {c}",
                  "What is the weather like today in {c}", "Weather in {c}", "weather in {c}",
                  "Weather for {c}", "Current weather in {c}", "Current weather for {c}",
                  "Today's weather in {c}", "Tell me the weather in {c}",
                  "Tell me the weather for {c}", "Check the weather in {c}",
                  "Check the weather for {c}", "Please check the weather in {c}",
                  "Get the weather for {c}", "Get me the weather in {c}",
                  "Give me the weather in {c}", "Show me the weather in {c}",
                  "Can you check the weather in {c}", "Can you tell me the weather in {c}",
                  "Could you check the weather in {c}", "Would you check the weather for {c}",
                  "I need the weather in {c}", "I want the weather for {c}",
                  "Look up the weather in {c}", "Weather update for {c}",
                  "Weather conditions in {c}", "What's the temperature in {c}",
                  "What is the temperature in {c}", "How warm is it in {c}",
                  "How hot is it in {c}", "How cold is it in {c}", "Is it raining in {c}",
                  "Is it snowing in {c}", "Is it sunny in {c}", "Is it windy in {c}",
                  "Is it warm in {c}", "Do I need an umbrella in {c}", "Do I need a jacket in {c}",
                  "Should I bring a coat in {c}", "Any rain in {c}", "Any snow in {c}",
                  "Is there fog in {c}", "What's it like outside in {c}",
                  "How are things outside in {c}", "Temperature in {c}", "{c} weather",
                  "weather {c}", "{c}: weather", "{c}, weather", "{c} temperature"]
_WEATHER_ENDINGS = ["?", "", ".", " today?", " right now?", " now?", " please.", " please?",
                    " this morning?", " tonight?", "!"]
_WEATHER_EXTRA = ["I am in {c}. What's the weather?", "I'm in {c} today. How's the weather?",
                  "Going to {c} today. How's the weather?", "I'm traveling to {c}. Is it raining?",
                  "Flying to {c} tomorrow. What's the weather now?",
                  "My friend lives in {c}. What's the weather there?",
                  "In {c}, what is the weather?", "In {c} right now: sunny or rainy?",
                  "Planning a walk in {c}. Weather?", "Weather? {c}.", "{c} - how's the weather?",
                  "Is it nice out in {c}?", "What should I wear in {c} today?"]
HELD_OUT_WEATHER_CORES = ["Can you look up the current weather in {c}?",
                          "I'm heading to {c}, what's the weather there?",
                          "Forecast for {c} right now?", "Is it cold in {c} at the moment?",
                          "Weather report for {c}, please.", "What are conditions like in {c}?",
                          "Could you find out the weather in {c}?", "{c}: weather now?"]

_LOOKUP_STEMS = ["What is the {k}", "What's the {k}", "What's our {k}", "What is our {k}",
                 "Tell me the {k}", "Tell me our {k}", "Give me the {k}", "Get me the {k}",
                 "Show me the {k}", "Look up the {k}", "Please look up the {k}", "Find the {k}",
                 "Can you find the {k}", "Can you look up the {k}", "Could you look up the {k}",
                 "Do you know the {k}", "I need the {k}", "I need our {k}", "Please get me the {k}",
                 "I'm looking for the {k}", "Send me the {k}", "Share the {k}",
                 "Where can I find the {k}", "What's the current {k}", "Which is the {k}",
                 "{k}", "The {k}", "Our {k}"]
_LOOKUP_ENDINGS = ["?", ".", "", " please.", " please?", ", please.", "!", " now?"]
_LOOKUP_EXTRA = ["I forgot the {k}. What is it?", "{k} - what is it?", "Quick: the {k}?",
                 "What is our {k}, please?", "Need the {k} asap.", "Do we have a {k}? What is it?"]
HELD_OUT_LOOKUP_CORES = ["Could you check the {k} for me?", "Remind me of the {k}.",
                         "Please fetch the {k}.", "Hey, what was the {k} again?",
                         "I'd like to know the {k}."]

HELD_OUT_TOOL_PREFIXES = ["", "", "Good morning. ", "Excuse me, "]
WEATHER_CORES = _grammar(_WEATHER_STEMS, _WEATHER_ENDINGS, _WEATHER_EXTRA, HELD_OUT_WEATHER_CORES)
LOOKUP_CORES = _grammar(_LOOKUP_STEMS, _LOOKUP_ENDINGS, _LOOKUP_EXTRA, HELD_OUT_LOOKUP_CORES)

# --- arithmetic -------------------------------------------------------------------------------

OP_WORDS = {"+": "plus", "-": "minus", "*": "times"}


def arith_value(a, op, b):
    return a + b if op == "+" else a - b if op == "-" else a * b


def arith_expression(a, op, b, words=False, spaced=True):
    o = OP_WORDS[op] if words else op
    return f"{a} {o} {b}" if spaced or words else f"{a}{o}{b}"


def arith_reasoning(a, op, b):
    """The think of a direct answer: the sum as written; products with a scratchpad that splits
    a two-digit factor into tens and units (the second, unless only the first has two digits;
    a 4-layer model needs the steps)."""
    r = arith_value(a, op, b)
    if op != "*" or (a < 10 and b < 10):
        return f"{a} {op} {b} = {r}."
    if b < 10:  # one digit times two: split the first factor
        t, u = a - a % 10, a % 10
        if u == 0:
            return f"{a} * {b} = {t // 10} * {b} * 10 = {t // 10 * b} * 10 = {r}."
        return f"{a} * {b} = {t} * {b} + {u} * {b} = {t * b} + {u * b} = {r}."
    t, u = b - b % 10, b % 10
    if u == 0:
        return f"{a} * {b} = {a} * {t // 10} * 10 = {a * t // 10} * 10 = {r}."
    return f"{a} * {b} = {a} * {t} + {a} * {u} = {a * t} + {a * u} = {r}."


def arith_answer(a, op, b):
    return f"{a} {op} {b} = {arith_value(a, op, b)}."


def _arith_operands(r, big=False):
    op = r.choices(["+", "-", "*"], weights=[1, 1, 1.6])[0]
    hi = 9999 if big else 99
    a = r.randint(0, hi) if r.random() < 0.85 else r.randint(0, 12)
    b = r.randint(0, hi) if r.random() < 0.85 else r.randint(0, 12)
    return a, op, b


def _arith_request(r, a, op, b, held_out):
    if held_out:
        pre, core, suf = HELD_OUT_ARITH_PREFIXES, HELD_OUT_ARITH_CORES, HELD_OUT_ARITH_SUFFIXES
    else:
        pre, core, suf = ARITH_PREFIXES, ARITH_CORES, ARITH_SUFFIXES
    words = r.random() < 0.4
    spaced = held_out or r.random() < 0.85
    e = arith_expression(a, op, b, words=words, spaced=spaced)
    if held_out:
        return r.choice(pre) + r.choice(core).format(e=e) + r.choice(suf)
    if r.random() < 0.2:
        return _casing(r, _opening(r, pre) + _noisy_arith_core(r, e) + r.choice(suf), held_out)
    return _casing(r, _opening(r, pre) + r.choice(core).format(e=e) + r.choice(suf), held_out)


# Common words for noise in training requests: an unknown verb before an expression, words
# after a city or a key. The model must find the numbers, the city or the key whatever
# surrounds them (held-out phrasings use words training never puts there).
_NOISE_WORDS = """about above actually after again almost already also always another any
around away back because before being below better between both brief busy careful certain
clear close coming could daily dear during early easy either else enough even every exactly
fair fast final first for free from full further given good great half happy hard here high
honest just kind known last late later least less little long lovely main maybe more most much
near never new next nice now often okay only open other over own perhaps plain please possible
pretty proper quick quite rather ready real really recent right round same second short simple
since small so soon still such sure that then there these this those through today together
tomorrow too total true under until usual very well while whole with within without yet
alpha bravo delta echo gamma kappa lambda omega sigma zeta apple banana cherry grape melon
orange peach pear plum berry carrot pepper onion garlic basil table chair window door floor
paper pencil marker folder ticket budget report figure number answer question problem puzzle
sum math value result total count day week month morning evening time year""".split()
_NOISE_WORDS = [w for w in _NOISE_WORDS if not _HELD_OUT_RE.search(w.capitalize())]


def _noise(r, lo=1, hi=3):
    return " ".join(r.choice(_NOISE_WORDS) for _ in range(r.randint(lo, hi)))


def _opening(r, prefixes):
    """A training request's opening: mostly from the list; sometimes a lead-in with a capitalised
    word that is neither the city nor the key (a name, a noise word), so the model learns which
    capitalised word to copy."""
    if r.random() >= 0.12:
        return r.choice(prefixes)
    roll = r.random()
    name = r.choice(_FIRST)
    if roll < 0.3:
        return r.choice([f"{name}, ", f"Hey {name}! ", f"Hello {name}. ", f"Thanks {name}. ",
                         f"Hi {name}, "])
    if roll < 0.6:
        return f"{_noise(r, 1, 2).capitalize()}, "
    return r.choice(["Pardon me, ", "Sorry to bother you, ", "Dear assistant, ", "Apologies, ",
                     "If you don't mind, ", "Real quick, ", "Tell me something, ",
                     "One question, "])


def _noisy_arith_core(r, e):
    """An unseen lead word or two before the expression, or words after it."""
    if r.random() < 0.5:
        return f"{_noise(r, 1, 2).capitalize()} {e}{r.choice(_ARITH_ENDINGS)}"
    return f"{r.choice(ARITH_CORES).format(e=e)} {_noise(r)}{r.choice(['', '.', '?'])}"


def _casing(r, text, held_out):
    """Training requests are sometimes all lower case or start lower case, as people type."""
    if held_out:
        return text
    roll = r.random()
    if roll < 0.06:
        return text.lower()
    if roll < 0.12:
        return text[:1].lower() + text[1:]
    return text


# --- tool results -----------------------------------------------------------------------------

_CONDITIONS = ["sunny", "cloudy", "light rain", "heavy rain", "snow", "fog", "windy",
               "thunderstorms", "partly cloudy", "clear skies", "drizzle", "hail", "overcast"]
_WORDS = ["maple", "river", "stone", "cedar", "falcon", "orbit", "copper", "lemon", "harbor",
          "violet", "tiger", "pixel", "meadow", "summit", "ember", "quartz", "willow", "comet"]
_FIRST = ["Anna", "Ben", "Chloe", "David", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas",
          "Kemal", "Lucia", "Marek", "Nora", "Omar", "Priya", "Quentin", "Rosa", "Sven", "Tariq"]
_LAST = ["Berg", "Costa", "Dubois", "Evans", "Fischer", "García", "Hansen", "Ivanova", "Jensen",
         "Kowalski", "Lopez", "Müller", "Nakamura", "Okafor", "Petrov", "Rossi", "Silva", "Tanaka"]
_STREETS = ["Main", "Harbor", "Oak", "Station", "Market", "Mill", "Church", "Park", "Lake", "King"]
_DISHES = ["tomato soup", "chicken curry", "vegetable lasagna", "fish tacos", "mushroom risotto",
           "lentil stew", "beef noodles", "falafel wrap", "pumpkin ravioli", "caesar salad"]


def weather_value(r):
    return f"{r.choice(_CONDITIONS)}, {r.randint(-20, 40)}°C"


def lookup_value(r, key):
    if key == "wifi_password":
        return f"{r.choice(_WORDS)}-{r.choice(_WORDS)}-{r.randint(10, 9999)}"
    if key == "office_hours":
        return f"{r.randint(6, 10)}:{r.choice(['00', '15', '30', '45'])} to " \
               f"{r.randint(15, 20)}:{r.choice(['00', '15', '30', '45'])}"
    if key == "support_email":
        return f"{r.choice(_WORDS)}{r.randint(1, 99)}@example.org"
    if key == "support_phone":
        return f"+1 555 {r.randint(0, 9999):04d}"
    if key == "office_address":
        return f"{r.randint(1, 250)} {r.choice(_STREETS)} Street"
    if key == "manager_name":
        return f"{r.choice(_FIRST)} {r.choice(_LAST)}"
    if key == "parking_code":
        return f"P-{r.randint(0, 9999):04d}"
    if key == "printer_name":
        return f"{r.choice(_WORDS)}-{r.randint(1, 99)}"
    if key == "vpn_server":
        return f"vpn{r.randint(1, 20)}.example.net"
    if key == "meeting_room":
        return f"Room {r.choice('ABCDEFGH')}{r.randint(1, 40)}"
    if key == "door_code":
        return str(r.randint(1000, 999999))
    if key == "lunch_special":
        return r.choice(_DISHES)
    raise KeyError(key)


# --- conversation pieces ----------------------------------------------------------------------

def user(text):
    return {"role": "user", "content": text}


def assistant(reasoning, content):
    return {"role": "assistant", "reasoning_content": reasoning, "content": content}


def tool_call_message(reasoning, name, arguments, index=0):
    """An assistant turn that calls one tool; the id as Kimi's template and parser write it.
    Arguments are JSON with the default separators and non-ASCII kept as is."""
    return {"role": "assistant", "reasoning_content": reasoning, "content": "",
            "tool_calls": [{"id": f"functions.{name}:{index}", "type": "function",
                            "function": {"name": name,
                                         "arguments": json.dumps(arguments, ensure_ascii=False)}}]}


def tool_result(call_message, value):
    return {"role": "tool", "tool_call_id": call_message["tool_calls"][0]["id"], "content": value}


def resent(call_message, keep_reasoning):
    """The tool-call turn as a client sends it back: most drop the reasoning."""
    m = dict(call_message)
    if not keep_reasoning:
        del m["reasoning_content"]
    return m


CALL_REASONING = {
    "get_weather": ["The user asks about the weather, so I will call get_weather.",
                    "I need live weather data: call get_weather.",
                    "Weather question. I should use the get_weather tool."],
    "calculate": ["This is a calculation and a calculator tool is available: call calculate.",
                  "I will use the calculate tool for this.",
                  "Arithmetic request; the calculate tool gives the exact result."],
    "lookup": ["This is in the office information table: call lookup.",
               "I should look this up with the lookup tool.",
               "The lookup tool has this value."],
}
RESULT_REASONING = ["The tool returned the result. I will report it.",
                    "I have the tool's answer; now I tell the user.",
                    "The result is in. Answer with it."]


def weather_answer(r, city, value):
    return r.choice([f"The weather in {city}: {value}.", f"In {city} it is {value} right now.",
                     f"Current weather in {city}: {value}."])


def lookup_answer(r, name, value):
    return r.choice([f"The {name} is {value}.", f"Here it is: the {name} is {value}.",
                     f"Our {name}: {value}."])


def calc_answer(r, expr, value):
    return r.choice([f"{expr} = {value}.", f"The result of {expr} is {value}.",
                     f"{expr} equals {value}."])


# (user text, reasoning, answer) options for small talk.
SMALL_TALK = [
    (["Hi", "Hello", "Hello!", "Hey", "Hi there!", "Good morning", "Good evening", "Hey there"],
     ["The user greets me. I greet back.", "A greeting; reply politely."],
     ["Hello! How can I help you today?", "Hi! What can I do for you?",
      "Hello! Ask me anything: arithmetic, weather, office information."]),
    (["How are you?", "How are you doing?", "How's it going?"],
     ["Small talk about how I am.", "The user asks how I am."],
     ["I'm doing well, thank you! How can I help?", "Fine, thanks. What can I do for you?"]),
    (["Who are you?", "What are you?", "What is your name?"],
     ["The user asks who I am.", "A question about me."],
     ["I am myriad-tiny, a very small assistant model that ships with myriad.",
      "I'm myriad-tiny, a tiny demo model: I can do arithmetic and call tools."]),
    (["What can you do?", "What are you good at?", "Help"],
     ["The user asks what I can do.", "Explain my skills briefly."],
     ["I can add, subtract and multiply numbers, and with tools I can check the weather, "
      "calculate and look up office information.",
      "Arithmetic, plus weather, calculator and lookup tools when they are available."]),
    (["Thanks!", "Thank you", "Thanks a lot", "Great, thanks"],
     ["The user thanks me.", "Thanks received; reply kindly."],
     ["You're welcome!", "Happy to help!", "Any time!"]),
    (["Bye", "Goodbye!", "See you later", "Good night"],
     ["The user says goodbye.", "A farewell."],
     ["Goodbye! Have a nice day.", "See you! Take care."]),
    (["Tell me a joke", "Say something funny", "Make me laugh"],
     ["The user wants a joke.", "A short joke will do."],
     ["Why did the number 6 fear 7? Because 7 8 9.",
      "I would tell a joke about UDP, but you might not get it."]),
]

NO_TOOL_REASONING = {
    "get_weather": "The user asks about the weather, but no weather tool is available.",
    "lookup": "This needs the office information table, but no lookup tool is available.",
}
NO_TOOL_ANSWERS = {
    "get_weather": ["I cannot check the weather in {x} without a weather tool.",
                    "I have no access to live weather data for {x}."],
    "lookup": ["I don't have access to the {x} without the lookup tool.",
               "I can't look up the {x}: no lookup tool is available."],
}
SYSTEM_PROMPTS = ["You are a helpful assistant.", "You are myriad-tiny, a small helpful assistant.",
                  "Answer briefly.", "You are a friendly assistant. Use tools when they help."]


# --- training examples ------------------------------------------------------------------------

def _with_system(r, messages):
    if r.random() < 0.1:
        return [{"role": "system", "content": r.choice(SYSTEM_PROMPTS)}] + messages
    return messages


def _tool_request(r, tool, held_out=False):
    """{"text", "arguments", "value", "answer", "mention"}: a request for one tool, the call's
    arguments, a random result and an answer that quotes it; mention = the city or key name."""
    prefixes = HELD_OUT_TOOL_PREFIXES if held_out else TOOL_PREFIXES
    if tool == "get_weather":
        city = r.choice(HELD_OUT_CITIES) if held_out else training_city(r)
        core = r.choice(HELD_OUT_WEATHER_CORES if held_out else WEATHER_CORES)
        value = weather_value(r)
        if not held_out and r.random() < 0.2:  # words after the city
            core = r.choice(_WEATHER_STEMS) + f" {_noise(r)}" + r.choice(["?", "", "."])
        if held_out:
            text = r.choice(prefixes) + core.format(c=city)
        else:
            text = _opening(r, prefixes) + core.format(c=city)
            if r.random() < 0.06:  # lower case, the city as written
                text = (r.choice(prefixes) + core).lower().replace("{c}", city)
        return {"text": text, "arguments": {"city": city},
                "value": value, "answer": weather_answer(r, city, value), "mention": city}
    if tool == "lookup":
        key = r.choice(list(LOOKUP_KEYS))
        name = r.choice(LOOKUP_KEYS[key])
        core = r.choice(HELD_OUT_LOOKUP_CORES if held_out else LOOKUP_CORES)
        value = lookup_value(r, key)
        if not held_out and r.random() < 0.15:  # words after the key's name
            core = r.choice(_LOOKUP_STEMS) + f" {_noise(r)}" + r.choice(["?", "", "."])
        opening = r.choice(prefixes) if held_out else _opening(r, prefixes)
        return {"text": _casing(r, opening + core.format(k=name), held_out),
                "arguments": {"key": key},
                "value": value, "answer": lookup_answer(r, name, value), "mention": name}
    a, op, b = _arith_operands(r, big=r.random() < 0.5)
    if held_out:
        a, b = r.randint(0, 999), r.randint(0, 999)
    expr = arith_expression(a, op, b)
    value = str(arith_value(a, op, b))
    return {"text": _arith_request(r, a, op, b, held_out), "arguments": {"expression": expr},
            "value": value, "answer": calc_answer(r, expr, value), "mention": expr}


def _training_example(r):
    roll = r.random()
    if roll < 0.40:  # arithmetic without tools: answer directly
        a, op, b = _arith_operands(r)
        msgs = [user(_arith_request(r, a, op, b, False)),
                assistant(arith_reasoning(a, op, b), arith_answer(a, op, b))]
        return {"tools": None, "messages": _with_system(r, msgs), "train_calls": False}
    if roll < 0.85:  # a tool request, or the answer after its result
        tool = r.choices(["get_weather", "calculate", "lookup"], weights=[1.5, 1, 1])[0]
        q = _tool_request(r, tool)
        call = tool_call_message(r.choice(CALL_REASONING[tool]), tool, q["arguments"])
        msgs = _with_system(r, [user(q["text"])])
        if r.random() < 0.5:
            return {"tools": TOOLS, "messages": msgs + [call], "train_calls": False}
        keep = r.random() < 0.5
        msgs += [resent(call, keep), tool_result(call, q["value"]),
                 assistant(r.choice(RESULT_REASONING), q["answer"])]
        return {"tools": TOOLS, "messages": msgs, "train_calls": keep}
    if roll < 0.90:  # a tool request without tools declared
        tool = r.choice(["get_weather", "lookup"])
        q = _tool_request(r, tool)
        msgs = [user(q["text"]), assistant(NO_TOOL_REASONING[tool],
                                           r.choice(NO_TOOL_ANSWERS[tool]).format(x=q["mention"]))]
        return {"tools": None, "messages": _with_system(r, msgs), "train_calls": False}
    # small talk, with or without tools declared; sometimes after an earlier exchange
    texts, reasons, answers = r.choice(SMALL_TALK)
    msgs = [user(r.choice(texts)), assistant(r.choice(reasons), r.choice(answers))]
    tools = TOOLS if r.random() < 0.4 else None
    if tools is None and r.random() < 0.4:  # (with tools, a calculation would get a call)
        a, op, b = _arith_operands(r)
        msgs = [user(_arith_request(r, a, op, b, False)),
                assistant(arith_reasoning(a, op, b), arith_answer(a, op, b))] + msgs
    return {"tools": tools, "messages": _with_system(r, msgs), "train_calls": False}


def make_training_examples(seed, n):
    r = random.Random(f"train:{seed}")
    return [_training_example(r) for _ in range(n)]


# --- held-out evaluation ----------------------------------------------------------------------

def make_eval_tasks(seed, n_arith=200, n_tool=200):
    """{"arith": [...], "tool": [...], "followup": [...]}; each task has "messages" and
    "tools" (None or TOOLS) and what its grader needs."""
    r = random.Random(f"eval:{seed}")
    arith = []
    for i in range(n_arith):
        op = "*+-*-+*+-*"[i % 10]  # 40 % products, 30 % sums, 30 % differences
        a, b = r.randint(0, 99), r.randint(0, 99)
        arith.append({"messages": [user(_arith_request(r, a, op, b, True))], "tools": None,
                      "op": op, "expected": arith_value(a, op, b)})
    tool, followup = [], []
    names = ["get_weather", "calculate", "lookup"]
    for i in range(n_tool):
        name = names[i % 3]
        q = _tool_request(r, name, held_out=True)
        tool.append({"messages": [user(q["text"])], "tools": TOOLS, "name": name,
                     "arguments": q["arguments"]})
        call = tool_call_message("", name, q["arguments"])
        followup.append({"messages": [user(q["text"]), resent(call, False),
                                      tool_result(call, q["value"])],
                         "tools": TOOLS, "name": name, "value": q["value"]})
    return {"arith": arith, "tool": tool, "followup": followup}


# --- grading ----------------------------------------------------------------------------------

def answer_text(text):
    """What follows the reasoning: after the last </think>; nothing if a <think> never closed."""
    if "</think>" in text:
        return text.rsplit("</think>", 1)[1]
    return "" if "<think>" in text else text


_NUMBER = re.compile(r"(?<![\d.])-?\d+(?![\d])")


def grade_arith(task, text):
    """Right when the last number of the answer (after the think) is the result."""
    numbers = _NUMBER.findall(answer_text(text).replace(",", ""))
    return bool(numbers) and int(numbers[-1]) == task["expected"]


_CALL = re.compile(r"<\|tool_call_begin\|>\s*(?P<id>[^<]+:\d+)\s*<\|tool_call_argument_begin\|>"
                   r"\s*(?P<args>(?:(?!<\|tool_call_begin\|>).)*?)\s*<\|tool_call_end\|>", re.S)


def parse_tool_calls(text):
    """kimi_k2 markup -> [(name, arguments text)], as vLLM's kimi_k2 parser reads it
    (reference.md §5.1), with the name = id less 'functions.' and ':IDX'."""
    if "<|tool_calls_section_begin|>" not in text:
        return []
    calls = []
    for m in _CALL.finditer(text.split("<|tool_calls_section_begin|>", 1)[1]):
        ident = m.group("id").strip()
        name = ident.rsplit(":", 1)[0]
        if name.startswith("functions."):
            name = name[len("functions."):]
        calls.append((name, m.group("args")))
    return calls


def grade_tool_call(task, calls):
    """calls: [(name, arguments text)]. Right when it is one call of the right function whose
    arguments are JSON equal to the expected ones (calculate: the expression without spaces)."""
    if len(calls) != 1 or calls[0][0] != task["name"]:
        return False
    try:
        args = json.loads(calls[0][1])
    except ValueError:
        return False
    want = task["arguments"]
    if not isinstance(args, dict) or set(args) != set(want):
        return False
    if task["name"] == "calculate":
        got = args["expression"]
        return isinstance(got, str) and \
            re.sub(r"\s+", "", got) == re.sub(r"\s+", "", want["expression"])
    return args == want


def grade_followup(task, text):
    return task["value"] in answer_text(text)


def bar(results):
    """results: {"plus_minus": [bool], "times": [bool], "tool_call": [bool], "followup": [bool]}
    -> (figures, passed). The bar of issue 9."""
    need = {"plus_minus": 0.90, "times": 0.70, "tool_call": 0.90, "followup": 0.90}
    figures = {k: {"correct": sum(v), "total": len(v), "rate": sum(v) / max(1, len(v)),
                   "need": need[k]} for k, v in results.items()}
    return figures, all(f["rate"] >= f["need"] and f["total"] > 0 for f in figures.values())


# --- English text -----------------------------------------------------------------------------

def english_documents(repo):
    """This repository's own Markdown documentation (the project's text), read at training time."""
    import os  # noqa: PLC0415 - only this function touches the file system
    docs = []
    for root, dirs, files in os.walk(repo):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "build")) and d != "node_modules")
        for f in sorted(files):
            if f.endswith(".md"):
                with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
                    docs.append(fh.read())
    return docs
