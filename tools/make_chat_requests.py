#!/usr/bin/env python3
"""Writes the chat requests of tests/data/chat_requests/ (OpenAI chat request bodies), which
tests/python/test_chat_template_oracle.py renders through every chat template with
`myriad chat-template` and with Python jinja2 / transformers.

They cover: system prompts (one and several), multi-turn chats, tools (nested JSON schemas with
floats, big integers, non-ASCII), tool calls (arguments as a string and as an object, several
per turn, with and without ids) and tool results, reasoning_content, `</think>` inside content,
empty and null content, content as a list of parts, names, unicode and template-looking text,
thinking on and off (chat_template_kwargs), and add_generation_prompt false.

Run: python3 tools/make_chat_requests.py   (rewrites the folder; deterministic)
"""

import json
import os

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "data",
                   "chat_requests")

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city. Températures in °C.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. 東京"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
                "days": {"type": "integer", "minimum": 1, "maximum": 10},
            },
            "required": ["city"],
        },
    },
}

SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web.\nReturns a list of \"results\".",
        "parameters": {
            "type": "object",
            "required": ["query"],
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": "number", "default": 10.0, "exclusiveMinimum": 0.1,
                          "multipleOf": 1e-05, "maximum": 12345678901234},
                "filters": {
                    "type": "object",
                    "properties": {"lang": {"type": ["string", "null"]}, "safe": {"type": "boolean", "default": True}},
                    "additionalProperties": False,
                },
                "tags": {"type": "array", "items": {"type": "string"}, "default": []},
            },
        },
    },
}


def call(id_, name, args, with_id=True):
    c = {"id": id_, "type": "function", "function": {"name": name, "arguments": args}}
    if not with_id:
        del c["id"]
    return c


def user(text, **extra):
    return {"role": "user", "content": text, **extra}


def system(text):
    return {"role": "system", "content": text}


def assistant(text, **extra):
    return {"role": "assistant", "content": text, **extra}


def tool(id_, text, **extra):
    return {"role": "tool", "tool_call_id": id_, "content": text, **extra}


WEATHER_ARGS = json.dumps({"city": "Paris", "unit": "celsius"})

REQUESTS = {
    "01_single_user": {"messages": [user("Hello!")]},
    "02_system_user": {"messages": [system("You are a concise assistant."), user("What is 2+2?")]},
    "03_multi_turn": {
        "messages": [
            system("You are helpful."),
            user("Name a prime number."),
            assistant("7"),
            user("Another one?"),
            assistant("11"),
            user("And the next?"),
        ]
    },
    "04_no_generation_prompt": {
        "messages": [user("Say hi."), assistant("Hi!")],
        "add_generation_prompt": False,
    },
    "05_several_system": {
        "messages": [system("Rule one: be brief."), system("Rule two: be kind."), user("Hi")]
    },
    "06_unicode": {
        "messages": [
            user("日本語のテキスト、中文、한국어, العربية, עברית, हिन्दी, ไทย — emoji 👩🏽‍💻🇫🇷, "
                 "combining e\u0301, NBSP\u00a0here, zero\u200bwidth."),
            assistant("Ça va? «Très bien» — 👍"),
            user("Tabs\tand\nnewlines\r\nand \"quotes\" and 'single' and back\\slash."),
        ]
    },
    "07_template_looking_text": {
        "messages": [
            system("Literal {{ bos_token }} and {% if x %} and {# c #} stay text."),
            user("<|im_end|><|im_start|>user fake tokens <think>x</think> {{ 1 + 1 }}"),
        ]
    },
    "08_empty_content": {
        "messages": [system(""), user(""), assistant(""), user("still here")]
    },
    "09_null_content_tool_call": {
        "messages": [
            user("Weather in Paris?"),
            assistant(None, tool_calls=[call("functions.get_weather:0", "get_weather", WEATHER_ARGS)]),
            tool("functions.get_weather:0", "{\"temp\": 21.5, \"sky\": \"clear\"}"),
        ],
        "tools": [WEATHER_TOOL],
    },
    "10_tools_only": {
        "messages": [system("Use tools when useful."), user("Find news about Mars.")],
        "tools": [WEATHER_TOOL, SEARCH_TOOL],
    },
    "11_tool_roundtrip": {
        "messages": [
            system("You can check the weather."),
            user("Weather in Paris and Tokyo?"),
            assistant("Let me check both.", tool_calls=[
                call("functions.get_weather:0", "get_weather", WEATHER_ARGS),
                call("functions.get_weather:1", "get_weather", json.dumps({"city": "東京"}, ensure_ascii=False)),
            ]),
            tool("functions.get_weather:0", "Paris: 21°C, clear"),
            tool("functions.get_weather:1", "東京: 18°C, rain"),
            assistant("Paris is clear at 21°C; Tokyo has rain at 18°C."),
            user("Thanks! And Berlin?"),
        ],
        "tools": [WEATHER_TOOL],
    },
    "12_tool_args_object": {
        "messages": [
            user("Search for llamas, 3 results."),
            assistant("", tool_calls=[call("functions.search:0", "search",
                                            {"query": "llamas", "limit": 3, "ratio": 0.5, "tags": ["a", "ü"],
                                             "filters": {"lang": None, "safe": True}})]),
            tool("functions.search:0", "[]"),
        ],
        "tools": [SEARCH_TOOL],
    },
    "13_tool_calls_without_ids": {
        "messages": [
            user("Two searches please."),
            assistant(None, tool_calls=[call("", "search", "{\"query\": \"a\"}", with_id=False),
                                        call("", "search", "{\"query\": \"b\"}", with_id=False)]),
            tool("x", "result a", name="search"),
            tool("y", "result b", name="search"),
        ],
        "tools": [SEARCH_TOOL],
    },
    "14_reasoning_history": {
        "messages": [
            user("What is 17*3?"),
            assistant("51", reasoning_content="17*3 = 51."),
            user("And 17*4?"),
            assistant("68", reasoning_content="17*4 = 68, one more 17."),
            user("Sum of both?"),
        ]
    },
    "15_reasoning_with_tools": {
        "messages": [
            user("Is it warm in Paris?"),
            assistant("", reasoning_content="I should call the weather tool.",
                      tool_calls=[call("functions.get_weather:0", "get_weather", WEATHER_ARGS)]),
            tool("functions.get_weather:0", "21°C"),
            assistant("Yes, 21°C.", reasoning_content="21 is warm enough."),
        ],
        "tools": [WEATHER_TOOL],
        "add_generation_prompt": False,
    },
    "16_think_in_content": {
        "messages": [
            user("Hi"),
            assistant("<think>\nsome old reasoning\n</think>\n\nHello there!"),
            user("Bye"),
        ]
    },
    "17_thinking_on": {
        "messages": [user("Prove that sqrt(2) is irrational.")],
        "chat_template_kwargs": {"thinking": True, "enable_thinking": True},
    },
    "18_thinking_off": {
        "messages": [system("Be short."), user("Capital of France?")],
        "chat_template_kwargs": {"thinking": False, "enable_thinking": False},
    },
    "19_thinking_off_history": {
        "messages": [
            user("a?"),
            assistant("A.", reasoning_content="easy"),
            user("b?"),
        ],
        "chat_template_kwargs": {"thinking": False, "enable_thinking": False},
    },
    "20_named_messages": {
        "messages": [
            system("Team chat."),
            user("I think we should ship.", name="alice"),
            assistant("Agreed.", name="bot"),
            user("Me too.", name="bob"),
        ]
    },
    "21_content_parts": {
        "messages": [
            user([{"type": "text", "text": "What is in this image?"},
                  {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
                  {"type": "text", "text": " Be brief."}]),
        ]
    },
    "22_null_tool_content": {
        "messages": [
            user("Run it."),
            assistant(None, tool_calls=[call("functions.get_weather:0", "get_weather", "{}")]),
            tool("functions.get_weather:0", None),
        ],
        "tools": [WEATHER_TOOL],
    },
    "23_empty_messages": {"messages": []},
    "24_long_chat": {
        "messages": [system("Count with me.")] + [
            m for i in range(10) for m in (user(f"{i}"), assistant(f"{i + 1}"))
        ] + [user("done")]
    },
    "25_prefix_assistant": {
        "messages": [user("Continue the poem."), assistant("Roses are red,", prefix=True)],
        "add_generation_prompt": False,
        "chat_template_kwargs": {"thinking": True},
    },
    "26_user_last_no_prompt": {
        "messages": [system("S"), user("U")],
        "add_generation_prompt": False,
    },
    "27_empty_tools": {"messages": [user("No tools here.")], "tools": []},
    "28_tool_response_as_user": {
        "messages": [
            user("Check."),
            assistant("", tool_calls=[call("c1", "search", "{\"query\": \"q\"}")]),
            user("<tool_response>\nplain result\n</tool_response>"),
        ],
        "tools": [SEARCH_TOOL],
    },
    "29_kwargs_tools_ts": {
        "messages": [user("Weather?")],
        "tools": [WEATHER_TOOL],
        "chat_template_kwargs": {"tools_ts_str": "# Tools\nnamespace functions {\n  type get_weather = (_: {city: string}) => any;\n}"},
    },
    "30_tool_then_answer_no_prompt": {
        "messages": [
            system("sys"),
            user("Weather?"),
            assistant(None, tool_calls=[call("functions.get_weather:0", "get_weather", WEATHER_ARGS)],
                      reasoning_content="Need the tool."),
            tool("functions.get_weather:0", "sunny"),
            assistant("It is sunny."),
        ],
        "tools": [WEATHER_TOOL],
        "add_generation_prompt": False,
        "chat_template_kwargs": {"thinking": True},
    },
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name in os.listdir(OUT):
        if name.endswith(".json"):
            os.remove(os.path.join(OUT, name))
    for name, req in REQUESTS.items():
        with open(os.path.join(OUT, name + ".json"), "w", encoding="utf-8") as f:
            json.dump(req, f, ensure_ascii=False, indent=1)
            f.write("\n")
    print(f"wrote {len(REQUESTS)} requests to {OUT}")


if __name__ == "__main__":
    main()
